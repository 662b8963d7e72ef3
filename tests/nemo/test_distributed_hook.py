"""Issue #21: one `distributed.multimodal` section for both. After ``install()``, nemo-automodel
0.7.0's ``parse_distributed_section`` gets the keys it defines (and validates them itself) and
mmfreeze parses its additions; a section of framework keys alone is the framework's business."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mmfreeze.exceptions import DistributedConfigError, IntegrationError
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]


WITH_ADDITIONS = "model: {}\ndistributed:\n  multimodal:\n    audio: {frozen_sharding: replicate}\n"
"""A recipe with an addition: the integration replaces the distributed functions for it alone."""


@pytest.fixture
def installation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from mmfreeze import nemo

    monkeypatch.setenv("WORLD_SIZE", "2")  # as torchrun sets it: a single device is refused (below)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(WITH_ADDITIONS)
    installed = nemo.install(recipe, guard=False)
    try:
        yield installed
    finally:
        installed.uninstall()


@pytest.fixture
def parse(installation: object) -> object:
    from nemo_automodel.recipes import _dist_utils

    return _dist_utils.parse_distributed_section


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


@pytest.mark.parametrize(("section", "why"), [
    ({"strategy": "ddp"}, "this recipe's strategy is ddp, which does not shard through FSDP2's hook"),
    ({"strategy": "megatron_fsdp"}, "this recipe's strategy is megatron_fsdp"),
    ({"strategy": "fsdp2", "moe": {}}, "parallelised by the MoE parallelizer"),
])
def test_a_strategy_whose_sharding_never_reaches_the_hook_is_refused_when_the_section_is_parsed(
    parse, section: dict, why: str,
) -> None:
    with pytest.raises(IntegrationError, match=why):
        parse({**section, "multimodal": {"audio": {"frozen_sharding": "per_layer"}}})


def test_a_single_device_run_with_additions_is_refused(parse, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(IntegrationError, match="this run has a single device"):
        parse({"multimodal": {"audio": {"frozen_sharding": "per_layer"}}})


def test_additions_for_a_model_on_a_one_rank_mesh_of_its_own_are_refused_when_its_section_is_parsed(parse) -> None:
    """Distillation on separate meshes with 2 ranks: the student's mesh is rank 0 alone, which the
    framework never shards (``fsdp2_sharding_enabled``). Two student ranks are sharded."""
    with pytest.raises(IntegrationError, match="this model's mesh has one rank"):
        parse({"dp_size": 1, "multimodal": {"vision": {"frozen_sharding": "replicate"}}})
    assert parse({"dp_size": 2, "multimodal": {"vision": {"frozen_sharding": "replicate"}}})["strategy_config"]


def test_each_parse_keeps_its_own_additions_as_distillation_parses_student_teacher_student_teacher(
    installation, parse,
) -> None:
    """kd_utils parses the student's section, then the teacher's, then each again: the additions of
    the student's parse are found from the student's strategy config, never the teacher's."""
    student_section = {"multimodal": {"audio": {"frozen_sharding": "per_layer"}}}
    teacher_section = {"multimodal": {"vision": {"run_dummy_forward": True}}}
    parses = [parse(section) for section in (student_section, teacher_section, student_section, teacher_section)]
    assert [installation.additions.find(result["strategy_config"]).keys for result in parses] == [
        ("distributed.multimodal.audio",), ("distributed.multimodal.vision.run_dummy_forward",)] * 2
