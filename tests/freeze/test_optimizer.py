"""The `optimizer` section as far as it decides parameter groups: parsed and validated in one place."""

from __future__ import annotations

import re

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.freeze.param_groups import assign_groups, canonical_name, exact_names_pattern
from mmfreeze.freeze.optimizer import GroupOverride, parse_optimizer


def section(overrides: object, target: str = "torch.optim.AdamW") -> dict:
    return {"optimizer": {"_target_": target, "param_group_overrides": overrides}}


def test_entries_keep_their_order_and_default_multipliers() -> None:
    parsed = parse_optimizer(section([{"pattern": "visual", "lr_mult": 0.1}, {"pattern": "lm_head", "wd_mult": 0}]))
    assert parsed is not None and parsed.overrides == (
        GroupOverride(index=0, pattern="visual", lr_mult=0.1), GroupOverride(index=1, pattern="lm_head", wd_mult=0.0))


def test_a_recipe_without_an_optimizer_or_overrides_has_no_groups() -> None:
    assert parse_optimizer({}) is None
    assert parse_optimizer({"optimizer": {"_target_": "torch.optim.AdamW", "lr": 1e-5}}).overrides == ()


@pytest.mark.parametrize(("overrides", "key", "message"), [
    ({"pattern": "x"}, "optimizer.param_group_overrides", "must be a list"),
    (["visual"], "optimizer.param_group_overrides[0]", "an entry is {pattern: <regex>"),
    ([{"pattern": "a[", "lr_mult": 1}], "optimizer.param_group_overrides[0].pattern", "is not a Python regex"),
    ([{"pattern": ""}], "optimizer.param_group_overrides[0].pattern", "non-empty regex string"),
    ([{"pattern": "a", "lr_mult": "0.1"}], "optimizer.param_group_overrides[0].lr_mult", "non-negative number"),
    ([{"pattern": "a", "wd_mult": -1}], "optimizer.param_group_overrides[0].wd_mult", "non-negative number"),
    ([{"pattern": "a", "lr_mul": 2}], "optimizer.param_group_overrides[0].lr_mul", "did you mean 'lr_mult'"),
])
def test_a_malformed_entry_is_a_recipe_error_naming_its_key(overrides: object, key: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message) as caught:
        parse_optimizer(section(overrides), source="r.yaml")
    assert caught.value.key == key and caught.value.source == "r.yaml"


@pytest.mark.parametrize(("target", "ignores"), [
    ("dion.Muon", True), ("dion.optim.Dion2", True), ("nemo_automodel.components.optim.optimizer.MuonConfig", True),
    ("torch.optim.AdamW", False), ("torch.optim.Adam", False), ("muon_like.Adam", False),
])
def test_dion_family_optimizers_are_known_to_ignore_the_overrides(target: str, ignores: bool) -> None:
    parsed = parse_optimizer(section([{"pattern": "a"}], target=target))
    assert parsed is not None and parsed.ignores_overrides is ignores


def test_the_first_matching_entry_takes_a_trainable_tensor_and_frozen_ones_join_no_group() -> None:
    overrides = parse_optimizer(section([{"pattern": "layers\\.1", "lr_mult": 3}, {"pattern": "layers", "lr_mult": 2}]))
    names = ["m.layers.0.w", "m.layers.1.w", "m.layers.10.w", "m.head.w"]
    groups = assign_groups(names, {"m.layers.0.w", "m.layers.1.w", "m.head.w"}, overrides.overrides)
    assert {name: override.index for name, override in groups.group_of.items()} == {"m.layers.0.w": 1, "m.layers.1.w": 0}
    assert groups.matched == {0: ("m.layers.1.w", "m.layers.10.w"), 1: ("m.layers.0.w", "m.layers.1.w", "m.layers.10.w")}


def test_checkpoint_wrapper_segments_are_not_part_of_the_name_matched() -> None:
    assert canonical_name("m.layers.0._checkpoint_wrapped_module.mlp.w") == "m.layers.0.mlp.w"


def test_a_selector_entry_is_parsed_with_the_freeze_config_vocabularys_selectors() -> None:
    parsed = parse_optimizer(section([
        {"role": "vision.tower", "lr_mult": 0.1},
        {"layers": "vision.tower", "last": 4, "lr_mult": 0.5},
        {"glob": "model.language_model.layers.*.mlp.gate", "wd_mult": 0},
        {"path": "model.visual.merger", "lr_mult": 10},
        {"role": "language_model"},
    ]))
    assert [override.selector.describe() for override in parsed.overrides] == [
        "role: vision.tower", "layers: vision.tower, last: 4", "glob: model.language_model.layers.*.mlp.gate",
        "path: model.visual.merger", "role: language_model"]
    assert [override.rate for override in parsed.overrides] == [(0.1, 1.0), (0.5, 1.0), (1.0, 0.0), (10.0, 1.0),
                                                                (1.0, 1.0)]
    assert [override.index for override in parsed.selectors] == [0, 1, 2, 3, 4]
    assert parsed.overrides[0].describe() == ("optimizer.param_group_overrides[0] (`role: vision.tower`, lr_mult 0.1, "
                                              "wd_mult 1)")


@pytest.mark.parametrize(("entry", "key", "message"), [
    ({"role": "vision", "lr_mult": 0.1}, "optimizer.param_group_overrides[0].role",
     r"names a \(modality, role\) group as `modality.role`"),
    ({"layers": "vision.tower", "lr_mult": 0.1}, "optimizer.param_group_overrides[0]",
     "a layer range has exactly one of `first: N`, `last: N` or `from: A` with `to: B`"),
    ({"layers": "vision.tower", "last": 0}, "optimizer.param_group_overrides[0].last", "must be a whole number"),
    ({"glob": "", "lr_mult": 2}, "optimizer.param_group_overrides[0].glob", "must be a non-empty string"),
    ({"path": "model.visual", "last": 2}, "optimizer.param_group_overrides[0].last", "unknown key 'last'"),
    ({"lr_mult": 2}, "optimizer.param_group_overrides[0]", "an entry is {pattern: <regex>} or a selector"),
    ({"role": "vision.tower", "glob": "x"}, "optimizer.param_group_overrides[0]", r"\(it has role, glob\)"),
])
def test_a_malformed_selector_entry_is_a_recipe_error_naming_its_key(entry: dict, key: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message) as caught:
        parse_optimizer(section([entry]), source="r.yaml")
    assert caught.value.key == key


def test_a_selector_entrys_tensors_are_matched_by_name_and_a_patterns_by_regex() -> None:
    overrides = parse_optimizer(section([{"path": "m.layers.1", "lr_mult": 3}, {"pattern": "layers", "lr_mult": 2}]))
    names = ["m.layers.0.w", "m.layers.1.w", "m.layers.10.w"]
    groups = assign_groups(names, names, overrides.overrides, {0: frozenset({"m.layers.1.w"})})
    assert {name: override.index for name, override in groups.group_of.items()} == {
        "m.layers.0.w": 1, "m.layers.1.w": 0, "m.layers.10.w": 1}


def test_the_exact_names_pattern_matches_those_names_and_nothing_else() -> None:
    names = ["a.b.weight", "a.b.bias", "a.bc.weight", "a", "x.1.w"]
    regex = re.compile(exact_names_pattern(names))
    assert all(regex.search(name) for name in names)
    assert not any(regex.search(name) for name in ["a.b", "a.b.weight2", "za.b.weight", "a.bc", "x.10.w", "x.1.w.q"])
