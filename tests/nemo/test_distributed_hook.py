"""Issue #21: one `distributed.multimodal` section for both. After ``install()``, nemo-automodel
0.7.0's ``parse_distributed_section`` gets the keys it defines (and validates them itself) and
mmfreeze parses its additions; a section of framework keys alone is the framework's business."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mmfreeze.exceptions import DistributedConfigError
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]


@pytest.fixture
def parse() -> Iterator[object]:
    from nemo_automodel.recipes import _dist_utils

    from mmfreeze import nemo

    installation = nemo.install(guard=False)
    try:
        yield _dist_utils.parse_distributed_section
    finally:
        installation.uninstall()


def multimodal(parsed: dict) -> object:
    return parsed["strategy_config"].multimodal


def test_framework_keys_keep_the_frameworks_meaning_and_defaults(parse) -> None:
    parsed = parse({"strategy": "fsdp2", "multimodal": {
        "frozen_sharding": "per_layer", "vision": {"frame_sharding": {"enabled": True, "min_frames": 8}}}})
    frame = multimodal(parsed).vision.frame_sharding
    assert multimodal(parsed).frozen_sharding == "per_layer"
    assert (frame.enabled, frame.min_frames, frame.min_local_patch_rows, frame.min_tokens) == (True, 8, 96, 2048)


def test_the_framework_validates_its_own_keys(parse) -> None:
    with pytest.raises(ValueError, match="min_local_patch_rows must be a non-negative integer"):
        parse({"multimodal": {"vision": {"frame_sharding": {"min_local_patch_rows": -1}}}})


def test_additions_reach_mmfreeze_and_the_framework_gets_the_rest(parse) -> None:
    parsed = parse({"multimodal": {"frozen_sharding": "root", "audio": {"frozen_sharding": "per_layer"},
                                   "vision": {"run_dummy_forward": True, "frame_sharding": {"min_tokens": 4}}}})
    assert multimodal(parsed).frozen_sharding == "root"
    assert multimodal(parsed).vision.frame_sharding.min_tokens == 4


def test_an_invalid_addition_is_mmfreezes_error_naming_the_key(parse) -> None:
    with pytest.raises(DistributedConfigError, match=r"distributed\.multimodal\.vision\.run_dummy_forward: 'sometimes' "
                                                     r"is not one of auto, true, false"):
        parse({"multimodal": {"vision": {"run_dummy_forward": "sometimes"}}})


def test_without_install_the_framework_rejects_an_addition() -> None:
    from nemo_automodel.recipes import _dist_utils

    with pytest.raises(TypeError, match="unexpected keyword argument 'audio'"):
        _dist_utils.parse_distributed_section({"multimodal": {"audio": {"frozen_sharding": "root"}}})
