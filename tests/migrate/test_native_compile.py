"""MF006 native-compile: the source kept under `mmfreeze:`, the release's own sections beside it,
and `snapshot`'s check that holds the two together (issue 39 items 1, 3 and 4)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from ruamel.yaml import YAML

from mmfreeze.exceptions import CompiledSectionError
from mmfreeze.freeze.compiler.target import CompileTarget
from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.migrate.run import MigrateOptions, plan_files
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.recipes.targets import DEFAULT_TARGETS
from mmfreeze.versions import installed_version

HEADER = ("recipe: FinetuneRecipeForVLM\nmodel:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
          "  pretrained_model_name_or_path: Qwen/Qwen2-VL-2B-Instruct\n"
          "lr_scheduler: {lr_decay_style: constant}\noptimizer:\n  _target_: torch.optim.AdamW\n  lr: 1.0e-5\n")
RATES = "  param_group_overrides:\n    - {role: vision.projector, lr_mult: 10.0}  # the merger learns fast\n"
SOURCE = "freeze_config:\n  # ViT frozen\n  vision: {tower: true, projector: false}\n  language_model: false\n"
TARGET = CompileTarget(release="0.7", transformers=installed_version("transformers"), builder="transformers")


@pytest.fixture
def migrate(tmp_path, workspace_of):
    def run(text: str):
        path = tmp_path / "recipe.yaml"
        path.write_text(text)
        result = plan_files([path], MigrateOptions(), workspace_of(tmp_path))[0]
        path.write_text(result.new_text)
        return path, result
    return run


def test_the_source_moves_under_mmfreeze_and_0_7_selectors_are_written_beside_it(migrate) -> None:
    path, result = migrate(HEADER + RATES + SOURCE)
    assert result.rules == ("MF006",) and result.status == "preserved"
    data = YAML(typ="safe").load(path.read_text())
    assert data["mmfreeze"]["freeze_config"] == {"vision": {"tower": True, "projector": False}, "language_model": False}
    assert data["mmfreeze"]["param_group_overrides"] == [{"role": "vision.projector", "lr_mult": 10.0}]
    assert data["mmfreeze"]["compiled_for"] == TARGET.describe()
    assert data["freeze_config"] == {"freeze_modules": [{"path": "model.visual.patch_embed"}, {"path": "model.visual.blocks"}]}
    assert data["optimizer"]["param_group_overrides"] == [{"pattern": r"^model\.visual\.merger\.", "lr_mult": 10.0}]
    text = path.read_text()
    assert "  # ViT frozen\n" in text and "# the merger learns fast" in text  # comments travel with the source


def test_migrating_twice_changes_nothing(migrate) -> None:
    path, _ = migrate(HEADER + RATES + SOURCE)
    again_path, again = migrate(path.read_text())
    assert not again.changed and again.new_text == again.old_text


def test_a_legacy_section_with_freeze_embeddings_migrates_and_compiles_in_a_0_7_repository(migrate) -> None:
    path, result = migrate(HEADER + "freeze_config:\n  freeze_vision_tower: true\n  freeze_embeddings: true\n")
    assert result.status == "preserved" and result.rules == ("MF001", "MF006"), result.error
    data = YAML(typ="safe").load(path.read_text())
    assert data["freeze_config"] == {"freeze_modules": [{"path": "model.visual"}]}  # the substring `visual` froze the merger


def _checked(path, structure_of):
    recipe = load_recipe(path, allowed_targets=DEFAULT_TARGETS)
    return recipe_frozen_set(recipe, structure_of(model_request(recipe)), target=TARGET)


def test_the_check_passes_the_file_migrate_wrote(migrate, structure_of) -> None:
    path, _ = migrate(HEADER + RATES + SOURCE)
    assert _checked(path, structure_of).rates == {(10.0, 1.0): frozenset(
        {"model.visual.merger.ln_q.weight", "model.visual.merger.ln_q.bias", "model.visual.merger.mlp.0.weight",
         "model.visual.merger.mlp.0.bias", "model.visual.merger.mlp.2.weight", "model.visual.merger.mlp.2.bias"})}


@pytest.mark.parametrize(("edit", "key"), [
    (("- {path: model.visual.blocks}", "- {path: model.visual}"), "freeze_config"),
    (("  language_model: false", "  language_model: true"), "freeze_config"),
    ((r"'^model\.visual\.merger\.'", r"'^model\.visual\.'"), "optimizer.param_group_overrides"),
])
def test_the_check_fails_when_either_side_was_edited(migrate, structure_of, edit, key) -> None:
    path, _ = migrate(HEADER + RATES + SOURCE)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(CompiledSectionError) as raised:
        _checked(path, structure_of)
    assert raised.value.key == key and "run `mmfreeze migrate`" in str(raised.value)


def test_the_check_fails_on_a_section_compiled_for_another_release(migrate, structure_of) -> None:
    path, _ = migrate(HEADER + SOURCE)
    path.write_text(path.read_text().replace("compiled_for: nemo-automodel 0.7,", "compiled_for: nemo-automodel 0.6,"))
    with pytest.raises(CompiledSectionError, match="stale; run `mmfreeze migrate`"):
        _checked(path, structure_of)


def test_a_section_compiled_on_another_model_tree_is_left_to_the_environment_it_names(migrate, structure_of) -> None:
    """Paths compiled on the framework's classes under its transformers pin are checked there
    (``.ci/framework_env``); here they need not match this tree."""
    path, _ = migrate(HEADER + SOURCE)
    other = replace(TARGET, transformers="5.18.0", builder="nemo-automodel 0.7.0").describe()
    path.write_text(path.read_text().replace(TARGET.describe(), other).replace("model.visual.blocks", "visual.blocks"))
    assert _checked(path, structure_of).frozen


def test_a_repository_on_0_6_keeps_its_new_vocabulary_section_for_the_integration(tmp_path, workspace_of) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(HEADER + SOURCE)
    result = plan_files([path], MigrateOptions(), workspace_of(tmp_path, framework="0.6"))[0]
    assert not result.changed
    assert any("nemo-automodel 0.6 has no module selectors" in note for note in result.notes), result.notes


PEFT = ("peft:\n  _target_: nemo_automodel.components._peft.lora.PeftConfig\n  target_modules: ['*.q_proj']\n"
        "  dim: 8\n  alpha: 16\n")
LANGUAGE_ONLY = "freeze_config:\n  vision: {tower: false, projector: false}\n  language_model: false\n"


def test_under_peft_the_source_and_the_empty_compiled_section_say_that_peft_decides_the_baseline(migrate) -> None:
    from mmfreeze.migrate.yaml.native_compile import EMPTY_NOTES, PEFT_SOURCE_NOTE

    path, _ = migrate(HEADER + PEFT + LANGUAGE_ONLY)
    lines = path.read_text().splitlines()
    data = YAML(typ="safe").load(path.read_text())
    assert data["freeze_config"] == {"freeze_modules": []} and data["mmfreeze"]["freeze_config"]["language_model"] is False
    assert lines[lines.index("mmfreeze:") + 2:][:2] == [f"  {PEFT_SOURCE_NOTE}", "  freeze_config:"]
    assert lines[lines.index("freeze_config:") + 1:][:2] == [f"  {EMPTY_NOTES[True]}", "  freeze_modules: []"]


def test_an_empty_compiled_section_without_peft_says_why_it_is_empty(migrate) -> None:
    from mmfreeze.migrate.yaml.native_compile import EMPTY_NOTES, PEFT_SOURCE_NOTE

    path, _ = migrate(HEADER + LANGUAGE_ONLY)
    text = path.read_text()
    assert f"freeze_config:\n  {EMPTY_NOTES[False]}\n  freeze_modules: []\n" in text and PEFT_SOURCE_NOTE not in text


def test_a_compiled_file_whose_notes_are_out_of_date_is_written_again_with_its_sections_as_they_are(migrate) -> None:
    from mmfreeze.migrate.yaml.native_compile import EMPTY_NOTES, PEFT_SOURCE_NOTE

    path, _ = migrate(HEADER + PEFT + LANGUAGE_ONLY)
    noted = path.read_text()
    stale = noted.replace(f"  {PEFT_SOURCE_NOTE}\n", "").replace(f"  {EMPTY_NOTES[True]}\n", "")
    _, again = migrate(stale)
    assert again.status == "recompiled" and again.new_text == noted
    _, without_peft = migrate(noted.replace(PEFT, ""))  # peft removed: its note goes, the empty note changes
    assert PEFT_SOURCE_NOTE not in without_peft.new_text and EMPTY_NOTES[False] in without_peft.new_text
