from __future__ import annotations

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.models.lora import lora_targets, with_lora_adapters
from mmfreeze.models.structure import ModelStructure, ParameterInfo


def linear(path: str, out_features: int = 4, in_features: int = 3) -> ParameterInfo:
    return ParameterInfo(name=f"{path}.weight", shape=(out_features, in_features), requires_grad=True)


STRUCTURE = ModelStructure(
    class_name="Toy",
    modules={"": "Toy", "model.visual.qkv": "Linear", "model.lm.q_proj": "Linear", "model.lm.norm": "RMSNorm",
             "lm_head": "Linear"},
    module_aliases={},
    parameters=(linear("model.visual.qkv"), linear("model.lm.q_proj"),
                ParameterInfo(name="model.lm.norm.weight", shape=(3,), requires_grad=True), linear("lm_head")),
)


def test_targets_match_by_leaf_name_and_wildcard_and_exclusions_win() -> None:
    peft = {"target_modules": ["q_proj", "*.qkv"], "exclude_modules": ["*visual*"]}
    assert lora_targets(STRUCTURE, peft) == ["model.lm.q_proj"]


def test_match_all_linear_skips_lm_head_and_non_linear_modules() -> None:
    assert lora_targets(STRUCTURE, {"match_all_linear": True}) == ["model.visual.qkv", "model.lm.q_proj"]


def test_injection_freezes_base_weights_and_adds_trainable_adapters_with_real_shapes() -> None:
    injected = with_lora_adapters(STRUCTURE, {"target_modules": ["q_proj"], "dim": 2})
    adapters = {info.name: info.shape for info in injected.parameters if info.requires_grad}
    assert adapters == {"model.lm.q_proj.lora_A.weight": (2, 3), "model.lm.q_proj.lora_B.weight": (4, 2)}
    assert injected.modules["model.lm.q_proj.lora_A"] == "Linear"


def test_peft_section_that_targets_nothing_is_an_error() -> None:
    with pytest.raises(RecipeError, match="LoRA would inject nothing"):
        with_lora_adapters(STRUCTURE, {"dim": 8}, source="r.yaml")


@pytest.mark.parametrize("dim", [0, -1, "8", True])
def test_invalid_dim_is_an_error(dim: object) -> None:
    with pytest.raises(RecipeError, match="positive integer"):
        with_lora_adapters(STRUCTURE, {"target_modules": ["q_proj"], "dim": dim})
