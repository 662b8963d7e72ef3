"""The checkpoint-rename rules: derived from name pairs, exact both ways, written and read back (pure)."""

from __future__ import annotations

import pytest

from mmfreeze.models.renames import RenameRule, Renames, derive_renames

SOURCE = "transformers 5.24.0 conversion mapping"
THINKER_518 = ["thinker.visual.blocks.0.attn.q.weight", "thinker.visual.blocks.1.attn.q.weight", "thinker.visual.merger.w",
               "thinker.audio_tower.layers.0.fc1.weight", "thinker.model.layers.0.mlp.w", "thinker.model.norm.weight",
               "thinker.lm_head.weight", "talker.model.layers.0.mlp.w", "token2wav.code.w"]


def to_524(name: str) -> str:
    for old, new in (("thinker.visual.", "thinker.model.visual."), ("thinker.audio_tower.", "thinker.model.audio_tower."),
                     ("thinker.model.", "thinker.model.language_model.")):
        if name.startswith(old):
            return new + name.removeprefix(old)
    return name


def test_a_nested_thinker_gives_one_rule_per_moved_module_and_leaves_the_rest_alone() -> None:
    names = [to_524(name) for name in THINKER_518]
    renames = derive_renames({to_524(n): n for n in THINKER_518 if to_524(n) != n}, names, SOURCE)
    assert renames.lines() == ("thinker.audio_tower.* -> thinker.model.audio_tower.*",
                               "thinker.model.* -> thinker.model.language_model.*",
                               "thinker.visual.* -> thinker.model.visual.*")
    assert [renames.to_checkpoint(name) for name in names] == THINKER_518
    assert [renames.to_model(name) for name in THINKER_518] == names


def test_a_rule_that_would_rename_an_unmoved_name_takes_more_of_the_name() -> None:
    """``a.x.w -> a.m.x.w`` alone would give ``a -> a.m``, which renames ``a.head.w`` too."""
    names = ["a.m.x.w", "a.head.w"]
    renames = derive_renames({"a.m.x.w": "a.x.w"}, names, SOURCE)
    assert renames.rules == (RenameRule("a.x", "a.m.x"),) and renames.source == SOURCE
    assert renames.to_checkpoint("a.head.w") == "a.head.w"


def test_two_modules_traded_are_two_rules_each_the_others_inverse() -> None:
    renames = derive_renames({"m.a.w": "m.b.w", "m.b.w": "m.a.w"}, ["m.a.w", "m.b.w"], SOURCE)
    assert renames.lines() == ("m.a.* -> m.b.*", "m.b.* -> m.a.*")
    assert renames.to_model("m.b.w") == "m.a.w" and renames.to_checkpoint("m.b.w") == "m.a.w"


def test_a_checkpoint_name_another_parameter_keeps_cannot_be_a_rule_and_is_left_out() -> None:
    """``x.w`` is renamed from ``y.w``, but ``y.w`` is also a parameter that keeps its name: no rule
    can give both, so the pair is not claimed (a comparison reports ``x.w`` as not mapped)."""
    renames = derive_renames({"x.w": "y.w"}, ["x.w", "y.w"], SOURCE)
    assert renames.rules == ()


def test_the_longest_rule_wins_either_way_and_applies_to_module_paths() -> None:
    renames = Renames((RenameRule("model", "model.language_model"), RenameRule("model.visual", "model.visual"),
                       RenameRule("visual", "model.visual")))
    assert renames.to_model("visual.blocks.0.w") == "model.visual.blocks.0.w"
    assert renames.to_model("visual") == "model.visual"
    assert renames.to_checkpoint("model.language_model.layers.0.w") == "model.layers.0.w"
    assert renames.to_model("lm_head.weight") == "lm_head.weight"


@pytest.mark.parametrize("rule", [RenameRule("a.b", "c.b"), RenameRule("a.w", "c.w", prefix=False)])
def test_a_rule_line_reads_back_as_the_rule(rule: RenameRule) -> None:
    assert RenameRule.parse(rule.line()) == rule


@pytest.mark.parametrize("line", ["a.* c.*", "a.* -> c", "a -> c.*", " -> c", "a -> "])
def test_a_malformed_rule_line_names_both_valid_shapes(line: str) -> None:
    with pytest.raises(ValueError, match=r"`checkpoint\.\* -> model\.\*` or `checkpoint\.name -> model\.name`"):
        RenameRule.parse(line)


def test_rules_compare_as_a_set() -> None:
    one, two = RenameRule("a", "b"), RenameRule("c", "d")
    assert Renames((one, two)) == Renames((two, one, one))


def test_rules_and_their_source_round_trip_through_json() -> None:
    renames = Renames((RenameRule("a", "b"), RenameRule("c.w", "d.w", prefix=False)), SOURCE)
    assert Renames.from_json(renames.to_json()) == renames


def test_a_rename_inside_every_layer_is_one_rule_with_the_index_as_a_wildcard() -> None:
    names = [f"model.layers.{i}.post_attn_norm.weight" for i in range(3)] + ["model.layers.0.mlp.w", "model.norm.weight"]
    checkpoint_of = {f"model.layers.{i}.post_attn_norm.weight": f"lm.layers.{i}.post_attention_layernorm.weight"
                     for i in range(3)}
    renames = derive_renames(checkpoint_of, names, SOURCE)
    assert renames.lines() == ("lm.layers.#.post_attention_layernorm.* -> model.layers.#.post_attn_norm.*",)
    assert [renames.to_checkpoint(name) for name in names] == [*checkpoint_of.values(), "model.layers.0.mlp.w",
                                                              "model.norm.weight"]
    assert renames.to_model("lm.layers.12.post_attention_layernorm.weight") == "model.layers.12.post_attn_norm.weight"


def test_a_layer_renamed_unlike_the_others_keeps_its_own_rule() -> None:
    """Gemma-style: layer 0's norm is renamed differently; the other layers share one rule."""
    checkpoint_of = {"m.layers.0.n.w": "c.layers.0.first_norm.w", "m.layers.1.n.w": "c.layers.1.norm.w",
                     "m.layers.2.n.w": "c.layers.2.norm.w"}
    renames = derive_renames(checkpoint_of, list(checkpoint_of), SOURCE)
    assert [renames.to_checkpoint(name) for name in checkpoint_of] == list(checkpoint_of.values())
    assert [renames.to_model(name) for name in checkpoint_of.values()] == list(checkpoint_of)
