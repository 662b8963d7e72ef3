"""Issue #21: a `(modality, role)` section gives the snapshot's set at every point where
nemo-automodel 0.7.0 applies its policy: strict on the whole model, then non-strict after
activation-checkpoint surgery and on a pipeline stage, which holds only part of the model.

The model is Qwen2.5-VL from the bundled registry, built on meta; the policy is the framework's own
``_apply_trainability_policy`` after ``install()``; the wrappers are torch's own
``checkpoint_wrapper``; the stage is the model with the layers another stage owns removed, as the
framework's pipeline splitting leaves a stage (a ``ModuleDict`` keyed by the original indices).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_CONFIGS
from tests.nemo.framework_env import requires_framework
from tests.nemo.framework_pipeline import fresh_model, mmfreeze_outcome, read_recipe

pytestmark = [pytest.mark.framework, requires_framework]

RECIPE = EXAMPLE_CONFIGS / "vlm_finetune" / "qwen2_5_vl" / "qwen2_5_vl_7b_cord_v2.yaml"
WRAPPED = "_checkpoint_wrapped_module."


@pytest.fixture
def policy(tmp_path: Path) -> Iterator[object]:
    """The framework's ``_apply_trainability_policy`` for the recipe's `(modality, role)` source
    section where 0.7 reads `freeze_config` (what only the integration trains), after ``install()``."""
    from functools import partial

    from nemo_automodel._transformers import infrastructure

    from mmfreeze import nemo

    source = dict(read_recipe(RECIPE).document["freeze_config"])
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(json.dumps({"model": {}, "freeze_config": source}))
    installation = nemo.install(recipe, guard=False)
    assert installation.context.needs == {"freeze"}
    section = infrastructure.parse_freeze_config(source)
    try:
        yield partial(infrastructure._apply_trainability_policy, peft_enabled=False, freeze_config=section)
    finally:
        installation.uninstall()


def trainable(model) -> set[str]:
    return {name.replace(WRAPPED, "") for name, p in model.named_parameters() if p.requires_grad}


def all_trainable_again(model) -> None:
    """What model surgery leaves: new parameter objects, trainable until the policy is re-applied."""
    for parameter in model.parameters():
        parameter.requires_grad_(True)


def test_the_section_is_a_new_vocabulary_one() -> None:
    assert set(read_recipe(RECIPE).document["freeze_config"]) == {"vision", "language_model"}


def test_strict_on_the_whole_model_gives_the_snapshots_set(policy) -> None:
    model = fresh_model(RECIPE, "framework")
    policy(model, strict=True)
    assert trainable(model) == mmfreeze_outcome(RECIPE, "framework").trainable


def test_after_activation_checkpointing_the_non_strict_pass_gives_the_same_set(policy) -> None:
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    model = fresh_model(RECIPE, "framework")
    policy(model, strict=True)
    expected = trainable(model)
    for layers in (model.model.visual.blocks, model.model.language_model.layers):
        for index, layer in enumerate(layers):
            layers[index] = checkpoint_wrapper(layer)
    all_trainable_again(model)
    policy(model, strict=False)
    assert any(WRAPPED in name for name, _ in model.named_parameters())
    assert trainable(model) == expected


def test_a_pipeline_stage_binds_what_it_holds(policy) -> None:
    import torch.nn as nn

    model = fresh_model(RECIPE, "framework")
    policy(model, strict=True)
    expected = trainable(model)
    stage = copy.deepcopy(model)
    layers = stage.model.language_model.layers
    # the first stage: the vision tower and the first half of the decoder layers
    stage.model.language_model.layers = nn.ModuleDict(
        {str(index): layer for index, layer in enumerate(layers) if index < len(layers) // 2})
    del stage.lm_head
    all_trainable_again(stage)
    policy(stage, strict=False)
    held = {name for name, _ in stage.named_parameters()}
    assert held < {name for name, _ in model.named_parameters()}
    assert trainable(stage) == expected & held
    assert any(name.startswith("model.visual.") for name in held - trainable(stage))  # the frozen tower
