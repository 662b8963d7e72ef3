"""Issue #21: "native" or "needs the integration", as nemo-automodel 0.7.0's own parsers decide.

For every bundled recipe and every framework-vocabulary twin, the recipe's `freeze_config` goes to
the framework's ``parse_freeze_config``, its `distributed` section to ``parse_distributed_section``
(the constructors of 0.7's typed `distributed.multimodal`) and its
`optimizer.param_group_overrides` to ``_coerce_param_group_overrides`` (issue 26). mmfreeze says "native" exactly when
neither rejects it; after ``install()`` every recipe it says needs the integration parses.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.distributed.config import FrameShardingConfig
from mmfreeze.distributed.native import native_support
from tests.nemo.framework_env import requires_framework
from tests.nemo.framework_pipeline import read_recipe
from tests.nemo.test_corpus_through_framework import CORPUS, FRAMEWORK_VOCABULARY, label

pytestmark = [pytest.mark.framework, requires_framework]


def framework_rejections(document: dict[str, Any]) -> list[str]:
    """What the framework's own parsers raise for the recipe's two sections."""
    from nemo_automodel.components.optim import optimizer
    from nemo_automodel.components.utils import model_utils
    from nemo_automodel.recipes import _dist_utils

    rejections = []
    for parse, section in ((model_utils.parse_freeze_config, document.get("freeze_config")),
                           (_dist_utils.parse_distributed_section, document.get("distributed")),
                           (optimizer._coerce_param_group_overrides,
                            (document.get("optimizer") or {}).get("param_group_overrides"))):
        if section is None:
            continue
        try:
            parse(section)
        except (TypeError, ValueError) as error:
            rejections.append(f"{type(error).__name__}: {error}")
    return rejections


@pytest.mark.parametrize("recipe", CORPUS + FRAMEWORK_VOCABULARY, ids=label)
def test_native_means_the_frameworks_parsers_accept_the_recipe(recipe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mmfreeze import nemo

    monkeypatch.setenv("WORLD_SIZE", "8")  # as torchrun sets it: additions on a single device are refused
    document = read_recipe(recipe).framework_document  # what the framework reads: a compiled recipe's compiled sections
    support = native_support(document)
    rejected = framework_rejections(document)
    assert (support.verdict == "native") == (not rejected), (support.describe(), rejected)
    if support.verdict == "needs the integration":
        installation = nemo.install(recipe, guard=False)
        try:
            assert framework_rejections(document) == []
        finally:
            installation.uninstall()


def test_frame_sharding_has_the_frameworks_fields_and_defaults() -> None:
    from nemo_automodel.components.distributed.cp_vision_frame_shard import CpVisionFrameShardingConfig

    framework = {field.name: getattr(CpVisionFrameShardingConfig(), field.name) for field in fields(CpVisionFrameShardingConfig)}
    ours = {field.name: getattr(FrameShardingConfig(), field.name) for field in fields(FrameShardingConfig)}
    assert ours == framework
