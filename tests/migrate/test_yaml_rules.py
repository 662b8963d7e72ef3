"""MF001-MF003 on small texts: before/after cases, comments kept, unsafe shapes refused, no-op twice."""

from __future__ import annotations

import importlib

import pytest

from dataclasses import replace

from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.rules import MF001, MF002, MF003, RULES, Rule
from mmfreeze.migrate.section import SectionMigration
from mmfreeze.migrate.yaml.context import SectionPlan, YamlContext
from mmfreeze.migrate.yaml.registry import YAML_RULES, apply_yaml_rules
from mmfreeze.migrate.yaml.text import load_roundtrip

SECTION = SectionMigration(section={"vision": {"tower": True, "projector": False}, "language_model": False})


def rewrite(text: str, context: YamlContext, *rules: Rule) -> str:
    """``text`` with ``rules`` alone run on its one parse, as a migration runs them."""
    chosen = [yaml_rule for yaml_rule in YAML_RULES if yaml_rule.rule in rules]
    return apply_yaml_rules(text, replace(context, document=load_roundtrip(text, source=context.source)), chosen)[0]


def _mf001(text: str, migration: SectionMigration = SECTION) -> str:
    return rewrite(text, YamlContext(source="r.yaml", plan=SectionPlan(migration=migration)), MF001)


def test_mf001_comments_follow_their_key_and_removed_keys_comments_open_the_section_below_why():
    before = (
        "a: 1  # keep\n\nfreeze_config:  # header\n  freeze_embeddings: true   # ignored\n"
        "  # ViT frozen\n  freeze_vision_tower: true\n\nz: ~\n"
    )
    dropped = replace(SECTION, comments={"freeze_config": ("freeze_embeddings removed: never read",)})
    assert _mf001(before, dropped) == (
        "a: 1  # keep\n\nfreeze_config:  # header\n  # freeze_embeddings removed: never read\n"
        "  # was on freeze_embeddings: ignored\n"
        "  # ViT frozen\n  vision: {tower: true, projector: false}\n  language_model: false\n\nz: ~\n"
    )


def test_mf001_writes_each_reason_above_the_key_it_explains():
    explained = replace(SECTION, comments={"vision": ("freeze_vision_tower: true written as vision: false: why",),
                                           "language_model": ("one", "two")})
    assert _mf001("freeze_config:\n  freeze_vision_tower: true\n", explained) == (
        "freeze_config:\n  # freeze_vision_tower: true written as vision: false: why\n"
        "  vision: {tower: true, projector: false}\n  # one\n  # two\n  language_model: false\n"
    )


def test_mf001_flow_section_becomes_block_and_four_space_files_keep_their_indent():
    before = "model:\n    x: 1\nfreeze_config: {freeze_vision_tower: true}\n"
    assert _mf001(before) == "model:\n    x: 1\nfreeze_config:\n    vision: {tower: true, projector: false}\n    language_model: false\n"


def test_mf001_escape_hatch_paths_carry_their_reason_and_last_line_without_newline_stays_so():
    migration = SectionMigration(section={"language_model": False, "modules": ["model.language_model"]},
                                 module_reasons={"model.language_model": "legacy rule X also froze this"})
    after = _mf001("freeze_config:\n  freeze_language_model: true", migration)
    assert after == ("freeze_config:\n  language_model: false\n  modules:\n    # legacy rule X also froze this\n"
                     "    - model.language_model")


def test_mf001_keeps_crlf_line_endings():
    assert _mf001("a: 1\r\nfreeze_config: {}\r\n") == (
        "a: 1\r\nfreeze_config:\r\n  vision: {tower: true, projector: false}\r\n  language_model: false\r\n")


@pytest.mark.parametrize("text", ["base: &fc {freeze_vision_tower: true}\nfreeze_config: *fc\n",
                                  "freeze_config:\n  <<: {freeze_vision_tower: true}\n"])
def test_mf001_refuses_anchors_aliases_and_merge_keys(text):
    with pytest.raises(MigrationError, match="anchor, alias or merge key"):
        _mf001(text)


def test_mf001_without_a_planned_section_is_a_no_op():
    text = "freeze_config:\n  vision: {tower: true}\n"
    assert rewrite(text, YamlContext(source="r.yaml"), MF001) == text


def _moves(text: str) -> str:
    return rewrite(text, YamlContext(source="r.yaml"), MF002, MF003)


def test_mf002_mf003_nest_both_keys_under_one_multimodal_block():
    before = ("distributed:\n  cp_size: 2\n  frozen_multimodal_sharding: per_layer   # why\n"
              "  cp_vision_frame_sharding:\n    enabled: true\n    mesh_dims: [cp]\n\nloss: x\n")
    after = _moves(before)
    assert after == ("distributed:\n  cp_size: 2\n  multimodal:\n    frozen_sharding: per_layer   # why\n"
                     "    vision:\n      frame_sharding:\n        enabled: true\n        mesh_dims: [cp]\n\nloss: x\n")
    assert _moves(after) == after


def test_mf002_appends_to_an_existing_multimodal_block():
    before = "distributed:\n  frozen_multimodal_sharding: root\n  multimodal:\n    validate_rank_uniform_execution: true\nx: 1\n"
    assert _moves(before) == (
        "distributed:\n  multimodal:\n    validate_rank_uniform_execution: true\n    frozen_sharding: root\nx: 1\n")


def test_already_nested_keys_are_left_alone_and_a_conflict_is_reported():
    nested = "distributed:\n  multimodal:\n    frozen_sharding: root\n"
    assert _moves(nested) == nested
    with pytest.raises(MigrationError, match="already exists"):
        _moves("distributed:\n  frozen_multimodal_sharding: root\n  multimodal:\n    frozen_sharding: root\n")


def test_mf001_writes_selector_entries_and_exceptions_as_flow_mappings():
    migration = SectionMigration(section={
        "vision": {"tower": True, "projector": True}, "language_model": False,
        "modules": ["model.language_model.embed_tokens", {"glob": "model.language_model.layers.*.mlp"}],
        "except": [{"layers": "vision.tower", "last": 4}],
    })
    assert _mf001("freeze_config:\n  freeze_modules: [{path: model.visual}]\n", migration) == (
        "freeze_config:\n  vision: {tower: true, projector: true}\n  language_model: false\n  modules:\n"
        "    - model.language_model.embed_tokens\n    - {glob: 'model.language_model.layers.*.mlp'}\n"
        "  except:\n    - {layers: vision.tower, last: 4}\n")


def test_mf001_comments_on_selector_items_follow_their_list_or_open_the_section_quoting_the_item():
    before = ("freeze_config:\n  # 0.7 selectors\n  freeze_modules:\n    - {glob: \"model.visual.*\"}   # the whole ViT\n"
              "  unfreeze_modules:\n    - {path: model.visual.merger}   # the merger trains\n")
    migration = SectionMigration(section={"vision": {"tower": True}, "language_model": False,
                                          "modules": ["model.language_model.embed_tokens"]})
    assert _mf001(before, migration) == (
        "freeze_config:\n  # was on unfreeze_modules: {path: model.visual.merger}: the merger trains\n"
        "  vision: {tower: true}\n  language_model: false\n  # 0.7 selectors\n"
        "  # {glob: \"model.visual.*\"}: the whole ViT\n  modules:\n    - model.language_model.embed_tokens\n")


@pytest.mark.parametrize("yaml_rule", YAML_RULES, ids=lambda yaml_rule: yaml_rule.rule.id)
def test_every_yaml_rule_documents_its_before_and_after(yaml_rule):
    rule, module = yaml_rule.rule, importlib.import_module(type(yaml_rule).__module__)
    assert rule.id in module.__doc__ and rule.name in module.__doc__
    assert "Before::" in module.__doc__ and "After" in module.__doc__


def test_the_yaml_rules_run_in_the_one_stated_order():
    assert [yaml_rule.rule for yaml_rule in YAML_RULES] == [rule for rule in RULES if not rule.id.startswith("MF1")]
