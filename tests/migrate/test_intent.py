"""`--mode intent` writes what the keys meant and lists every difference, grouped by module."""

from __future__ import annotations

from mmfreeze.migrate.run import MigrateOptions, plan_files
from tests.migrate.conftest import PRE_MIGRATION

QWEN = PRE_MIGRATION / "distillation" / "qwen2_5_vl_72b_to_7b_cord_v2.yaml"
AUDIO_ONLY = PRE_MIGRATION / "audio_finetune" / "voxtral" / "voxtral_mini_librispeech.yaml"


def _intent(path, workspace_of):
    return plan_files([path], MigrateOptions(mode="intent"), workspace_of(path.parent))[0]


def test_intent_unfreezes_the_merger_the_substring_froze_and_says_so(workspace_of):
    result = _intent(QWEN, workspace_of)
    assert "vision: {tower: true, projector: false}" in result.new_text
    assert result.status == "changed"
    merger = [(g.label, g.tensors, g.parameters) for g in result.newly_trainable]
    assert merger == [("model.visual.merger (vision projector)", 5, 44_574_464)] and not result.newly_frozen


def test_intent_drops_the_vision_default_on_an_audio_only_model_and_reports_it(workspace_of):
    result = _intent(AUDIO_ONLY, workspace_of)
    section = result.new_text.split("freeze_config:")[1].splitlines()
    assert not [line for line in section if line.strip().startswith("vision")]  # no vision key
    dropped = "freeze_vision_tower: true (legacy default) dropped: the model has no vision modality"
    assert dropped in result.notes and f"    # {dropped}" in section  # in the report and, why, in the file
    assert result.status == "preserved"
