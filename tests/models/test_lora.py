"""LoRA on structures, case by case; `tests/framework/` compares it with the framework on real models."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mmfreeze.exceptions import RecipeError
from mmfreeze.models.lora import (
    LoraSpec,
    add_live_lora_adapters,
    lora_targets,
    parse_peft_section,
    wildcard_regex,
    with_lora_adapters,
)
from mmfreeze.models.structure import structure_of


class Toy(nn.Module):
    """A vision Linear, a decoder layer, an ``nn.MultiheadAttention`` (its ``out_proj`` is a Linear
    subclass), a norm and an untied ``lm_head``."""

    def __init__(self) -> None:
        super().__init__()
        self.visual = nn.ModuleDict({"qkv": nn.Linear(3, 4)})
        self.layers = nn.ModuleList([nn.ModuleDict({"q_proj": nn.Linear(3, 4)}) for _ in range(11)])
        self.attn = nn.MultiheadAttention(4, 1)
        self.norm = nn.LayerNorm(3)
        self.lm_head = nn.Linear(3, 5)


STRUCTURE = structure_of(Toy())


def targets(**peft: object) -> list[str]:
    return lora_targets(STRUCTURE, parse_peft_section(peft))


def test_exclude_only_takes_every_linear_but_the_excluded_ones() -> None:
    found = targets(exclude_modules=["*visual*", "lm_head"])
    assert found == [f"layers.{i}.q_proj" for i in range(11)] + ["attn.out_proj"]


def test_an_empty_section_defaults_to_proj_suffixes() -> None:
    assert parse_peft_section({}).target_modules == ("*_proj",)
    assert targets() == [f"layers.{i}.q_proj" for i in range(11)] + ["attn.out_proj"]


def test_match_all_linear_includes_lm_head_and_linear_subclasses() -> None:
    assert targets(match_all_linear=True) == ["visual.qkv", *(f"layers.{i}.q_proj" for i in range(11)),
                                              "attn.out_proj", "lm_head"]


def test_a_bare_leaf_name_selects_nothing_nested() -> None:
    assert targets(target_modules=["q_proj"]) == []


def test_wildcards_keep_a_numeric_index_whole_in_0_7_but_not_in_0_6() -> None:
    assert wildcard_regex("*.layers.1.*", "0.7").match("model.layers.1.q_proj")
    assert not wildcard_regex("*.layers.1.*", "0.7").match("model.layers.10.q_proj")
    assert wildcard_regex("*.layers.1.*", "0.6").match("model.layers.10.q_proj")
    assert lora_targets(STRUCTURE, parse_peft_section({"target_modules": ["layers.1*"]}), "0.7") == [
        "layers.1.q_proj", "layers.10.q_proj"]


@pytest.mark.parametrize(
    ("peft", "key", "message"),
    [({"target_modules": ["*_proj"], "exclude_modules": ["*visual*"]}, "peft", "mutually exclusive"),
     ({"match_all_linear": True, "exclude_modules": ["lm_head"]}, "peft.match_all_linear", "must be empty"),
     ({"rank": 4}, "peft", "unknown key"),
     ({"target_modules": ["(q_proj"]}, "peft.target_modules", "not a valid wildcard"),
     ({"dim": 0}, "peft.dim", "positive integer"), ({"dim": True}, "peft.dim", "positive integer"),
     ({"match_all_linear": "yes"}, "peft.match_all_linear", "true or false")],
)
def test_what_the_framework_rejects_is_an_error_naming_the_key(peft: dict, key: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message) as caught:
        parse_peft_section(peft, source="r.yaml")
    assert caught.value.key == key and caught.value.source == "r.yaml"


def test_injection_freezes_base_weights_and_adds_trainable_adapters_with_real_shapes() -> None:
    injected = with_lora_adapters(STRUCTURE, LoraSpec(target_modules=("layers.0.q_proj",), dim=2, use_dora=True))
    trainable = {info.name: info.shape for info in injected.parameters if info.requires_grad}
    assert trainable == {"layers.0.q_proj.lora_A.weight": (2, 3), "layers.0.q_proj.lora_B.weight": (4, 2),
                         "layers.0.q_proj.lora_magnitude": (4,)}
    assert {"layers.0.q_proj.lora_A", "layers.0.q_proj.lora_B"} <= injected.linear_modules


def test_the_0_6_baseline_keeps_a_built_frozen_adapter_frozen_where_0_7_trains_it() -> None:
    model = Toy()
    model.layers[0].q_proj.lora_A = nn.Linear(3, 2)  # an adapter the model itself built frozen
    model.layers[0].q_proj.lora_A.requires_grad_(False)
    structure = structure_of(model)
    spec = LoraSpec(target_modules=("lm_head",))
    name = "layers.0.q_proj.lora_A.weight"
    assert with_lora_adapters(structure, spec, "0.7").parameters_by_name[name].requires_grad
    assert not with_lora_adapters(structure, spec, "0.6").parameters_by_name[name].requires_grad


def test_the_live_adapter_gives_the_structure_the_structure_level_injection_gives() -> None:
    spec = parse_peft_section({"exclude_modules": ["*visual*"], "dim": 3, "use_dora": True})
    model = Toy()
    with torch.device("meta"):
        add_live_lora_adapters(model, lora_targets(STRUCTURE, spec), spec)
    live = structure_of(model)
    planned = with_lora_adapters(STRUCTURE, spec)
    assert {(i.name, i.shape) for i in live.parameters} == {(i.name, i.shape) for i in planned.parameters}
    assert live.modules.keys() == planned.modules.keys() and live.linear_modules == planned.linear_modules


def test_a_lora_pattern_that_backtracks_is_an_input_error_within_seconds() -> None:
    """The framework compiles a recipe's `target_modules` entry as a regex of its own text; one with
    nested repeats would hang the check on a long module path (issue 40), and is an input error."""
    import time

    from mmfreeze.exceptions import RecipeError
    from mmfreeze.models.lora import WILDCARD_SECONDS, wildcard_matches

    started = time.monotonic()
    with pytest.raises(RecipeError, match="backtracks") as raised:
        wildcard_matches("(.|.)+\\d", "model.language_model.layers.10.self_attn.q_proj" * 2, "0.7",
                         key="peft.target_modules")
    assert raised.value.key == "peft.target_modules"
    assert time.monotonic() - started < WILDCARD_SECONDS + 5
    assert wildcard_matches("*.layers.1.*", "model.layers.1.q_proj", "0.7")  # the same semantics as before
