"""`migrate` on 0.7 selector and mixed sections, both modes: what is written, and the input errors
(unknown keys, selectors matching nothing, what the new vocabulary cannot express), each reported
with file:line and nothing written."""

from __future__ import annotations

import pytest

from mmfreeze.migrate.run import MigrateOptions, plan_files

HEADER = ("model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
          "  pretrained_model_name_or_path: Qwen/Qwen2-VL-2B-Instruct\n")
LORA = "peft:\n  _target_: nemo_automodel.components._peft.lora.PeftConfig\n  dim: 8\n"


@pytest.fixture
def migrate(tmp_path, workspace_of):
    def run(section: str, *, mode: str = "preserve", extra: str = ""):
        path = tmp_path / "recipe.yaml"
        path.write_text(HEADER + extra + "freeze_config:\n" + section)
        # MF001's rewrite alone: MF006 (the compiled section beside it) has its own tests.
        options = MigrateOptions(mode=mode, disabled=frozenset({"MF006"}))
        return plan_files([path], options, workspace_of(tmp_path))[0]
    return run


def _section(text: str) -> str:
    return text.split("freeze_config:\n", 1)[1]


def test_preserve_turns_an_unfrozen_merger_into_role_flags(migrate):
    result = migrate("  freeze_modules: [{path: model.visual}]\n  unfreeze_modules: [{path: model.visual.merger}]\n")
    assert result.status == "preserved" and result.rules == ("MF001",)
    assert _section(result.new_text) == "  vision: {tower: true, projector: false}\n  language_model: false\n"


def test_preserve_keeps_a_legacy_flag_beside_selectors_and_carves_the_exception(migrate):
    result = migrate("  freeze_vision_tower: true\n  unfreeze_modules: [{glob: 'model.visual.blocks.3[01]'}]\n")
    assert _section(result.new_text) == (
        "  # vision.tower written true with `except`: 24 tensors / 39.4M parameters of its 385 tensors / 631M "
        "parameters stay trainable\n"
        "  vision: {tower: true, projector: true}\n  language_model: false\n"
        "  except:\n    - {layers: vision.tower, last: 2}\n")


@pytest.mark.parametrize("mode", ["preserve", "intent"])
def test_a_misspelt_legacy_key_is_an_input_error_with_a_did_you_mean(migrate, mode):
    result = migrate("  freeze_vison_tower: false\n  freeze_language_model: true\n", mode=mode)
    assert result.status == "skipped" and not result.changed
    assert ("recipe.yaml:4: freeze_config.freeze_vison_tower: unknown key (did you mean 'freeze_vision_tower'?)"
            in result.error)


@pytest.mark.parametrize(("selector", "suggestion"), [
    ("{path: model.visual.mergr}", "'model.visual.merger'"),
    ("{glob: 'model.visul.blocks.*'}", "'model.visual.blocks.*'"),
])
def test_a_selector_matching_nothing_is_an_input_error_with_a_did_you_mean(migrate, selector, suggestion):
    result = migrate(f"  freeze_modules: [{selector}]\n")
    assert result.status == "skipped" and not result.changed
    assert ":4: freeze_config.freeze_modules[0]:" in result.error and f"(did you mean {suggestion}?)" in result.error


def test_an_unfreeze_of_what_the_peft_baseline_froze_is_kept_in_the_frameworks_vocabulary_and_says_why(migrate):
    """No new section says it, and the section is valid: the file is kept, and the run does not fail."""
    from mmfreeze.migrate.run import is_failure

    result = migrate("  unfreeze_modules: [{path: model.visual.merger}]\n", extra=LORA)
    assert result.status == "kept" and not result.changed and result.error is None and not is_failure(result, strict=True)
    [why] = result.notes
    assert "recipe.yaml:7: freeze_config: the framework's result makes trainable 6 tensors / 34.1M parameters" in why
    assert "model.visual.merger (vision projector) (6 tensors / 34.1M parameters)" in why
    assert "nothing written, keep this section in nemo-automodel's vocabulary" in why


def test_intent_translates_selectors_entry_by_entry(migrate):
    result = migrate("  freeze_modules: [{path: model.visual}]\n  unfreeze_modules: [{glob: 'model.visual.blocks.3[01]'}]\n",
                     mode="intent")
    assert result.status == "preserved"
    assert _section(result.new_text) == ("  vision: {tower: false, projector: false}\n  language_model: false\n"
                                         "  modules:\n    - model.visual\n  except:\n    - {glob: 'model.visual.blocks.3[01]'}\n")


def test_intent_drops_an_exception_the_new_vocabulary_rejects_and_reports_the_difference(migrate):
    result = migrate("  unfreeze_modules: [{path: model.visual.merger}]\n", mode="intent", extra=LORA)
    section = _section(result.new_text)
    assert result.status == "changed" and "  except:" not in section
    assert "  # unfreeze_modules[0] (model.visual.merger) dropped: keeps nothing trainable" in section  # why, in the file
    assert any(note.startswith("unfreeze_modules[0] (model.visual.merger) dropped: keeps nothing trainable")
               for note in result.notes)
    merger = [(g.label, g.tensors, g.parameters) for g in result.newly_frozen]
    assert merger == [("model.visual.merger (vision projector)", 6, 34_087_936)] and not result.newly_trainable
