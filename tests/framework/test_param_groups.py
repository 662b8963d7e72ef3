"""Issue 26, item 1: mmfreeze's optimizer groups equal nemo-automodel 0.7.0's, tensor by tensor.

On each registry model built on meta, the framework's own ``_apply_trainability_policy`` decides
what trains (the legacy default: the vision tower frozen; with LoRA, the PEFT baseline), then the
framework's own ``_build_param_groups`` groups the trainable tensors. Every override shape the
issue names is run: a substring, an anchored regex, overlapping patterns (the first wins), a
pattern that matches only frozen tensors, one that matches nothing, and LoRA adapters at their own
rate. mmfreeze's :func:`~mmfreeze.freeze.param_groups.assign_groups` must put every trainable
tensor in the same group (the default one included).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
from torch import nn

from mmfreeze.freeze.param_groups import assign_groups
from mmfreeze.freeze.optimizer import OptimizerSection, parse_optimizer
from tests.framework.test_differential import FAST_MODELS, fresh_model
from tests.nemo.framework_env import once_per_framework_release

pytestmark = [pytest.mark.framework, once_per_framework_release]

MODELS = (*FAST_MODELS, "Qwen__Qwen2.5-VL-7B-Instruct", "llava-hf__llava-1.5-7b-hf", "Qwen__Qwen3-VL-30B-A3B-Instruct",
          "google__gemma-3-4b-it", "OpenGVLab__InternVL3-1B-hf", "mistralai__Voxtral-Mini-3B-2507")
"""Ten registry models: dense and MoE VLMs, audio, Gemma-style and LLaVA-style towers."""
SHAPES: dict[str, list[dict[str, Any]]] = {
    "substring": [{"pattern": "vision|visual", "lr_mult": 0.1}, {"pattern": "projector|merger", "lr_mult": 10.0}],
    "anchored": [{"pattern": r"^model\.language_model\.layers\.\d+\.mlp\.", "lr_mult": 0.5, "wd_mult": 0.0},
                 {"pattern": r"^lm_head\.weight$", "lr_mult": 2.0}],
    "overlapping": [{"pattern": r"layers\.1\.", "lr_mult": 3.0}, {"pattern": r"layers\.1", "lr_mult": 0.3},
                    {"pattern": "norm", "wd_mult": 0.0}],
    "router": [{"pattern": r"mlp\.gate\.weight$|router", "lr_mult": 0.1}],
    "frozen-only": [{"pattern": "vision_tower|visual|audio_tower", "lr_mult": 0.1}],
    "no-match": [{"pattern": "does_not_exist", "lr_mult": 0.1}, {"pattern": "embed", "lr_mult": 0.5}],
    "lora": [{"pattern": "lora_", "lr_mult": 2.0}, {"pattern": "projector|merger", "lr_mult": 10.0}],
}
GROUPS_SOMETHING_EVERYWHERE = {"substring", "overlapping", "lora"}
"""Shapes that put some trainable tensor of every one of these models outside the default group."""
LORA = {"_target_": "nemo_automodel.components._peft.lora.PeftConfig", "match_all_linear": True, "dim": 8, "alpha": 16}


@cache
def built(name: str) -> nn.Module:
    """Each model built once per run; a test trains a deep copy."""
    return fresh_model(name)


def framework_groups(model: nn.Module, section: OptimizerSection) -> dict[str, int | None]:
    """Trainable name -> the override index the framework's ``_build_param_groups`` put it under
    (``None``: the default group). A group carries only its multipliers, so each shape gives its
    entries distinct ones."""
    from nemo_automodel.components.optim.optimizer import ParamGroupOverride, _build_param_groups

    named = [(name, parameter) for name, parameter in model.named_parameters() if parameter.requires_grad]
    overrides = [ParamGroupOverride(pattern=o.pattern, lr_mult=o.lr_mult, wd_mult=o.wd_mult) for o in section.overrides]
    index_of = {(o.lr_mult, o.wd_mult): o.index for o in section.overrides}
    assert len(index_of) == len(section.overrides), "each entry of a shape needs its own multipliers"
    name_of = {id(parameter): name for name, parameter in named}
    grouped: dict[str, int | None] = {name: None for name, _ in named}
    for group in _build_param_groups(named, overrides):
        if "lr_mult" in group:
            for parameter in group["params"]:
                grouped[name_of[id(parameter)]] = index_of[group["lr_mult"], group["wd_mult"]]
    return grouped


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", [n if n in FAST_MODELS else pytest.param(n, marks=pytest.mark.slow) for n in MODELS])
def test_every_trainable_tensor_joins_the_group_the_framework_gives_it(name: str, shape: str) -> None:
    from tests.framework.oracle import framework_trainability

    section = parse_optimizer({"optimizer": {"_target_": "torch.optim.AdamW", "param_group_overrides": SHAPES[shape]}})
    assert section is not None
    model = copy.deepcopy(built(name))
    _, trainable = framework_trainability(model, None, LORA if shape == "lora" else None)
    expected = framework_groups(model, section)
    names = [parameter for parameter, _ in model.named_parameters()]
    ours = assign_groups(names, trainable, section.overrides).group_of
    assert {n: (ours[n].index if n in ours else None) for n in trainable} == expected
    assert set(expected) == set(trainable)
    if shape in GROUPS_SOMETHING_EVERYWHERE:  # the comparison is not only of two default groups
        assert any(index is not None for index in expected.values())
