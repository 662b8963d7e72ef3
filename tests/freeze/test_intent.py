from __future__ import annotations

from mmfreeze.freeze.intent import translate_intent

ROLES = {"vision": {"tower", "projector"}}


def translate(legacy: dict, paths: set[str] = frozenset()) -> tuple[dict, tuple[str, ...]]:
    result = translate_intent(legacy, roles_by_modality=ROLES, module_paths=paths)
    return result.section, result.notes


def test_empty_section_writes_the_legacy_defaults_explicitly() -> None:
    assert translate({}) == ({"vision": {"projector": False, "tower": True}, "language_model": False}, ())


def test_values_keep_their_legacy_truthiness() -> None:
    section, _ = translate({"freeze_vision_tower": "no", "freeze_language_model": 1})
    assert section["vision"]["tower"] is True and section["language_model"] is True


def test_freeze_embeddings_is_removed_with_a_note() -> None:
    _, notes = translate({"freeze_embeddings": True})
    assert notes == ("`freeze_embeddings` removed: the legacy engine never read it",)


def test_flag_for_a_modality_the_model_lacks_is_dropped_with_a_note() -> None:
    section, notes = translate({"freeze_audio_tower": True})
    assert "audio" not in section and notes == ("`freeze_audio_tower: true` dropped: this model has no audio tower",)


def test_video_embedder_flag_becomes_its_module_path_when_present() -> None:
    section, _ = translate({"freeze_video_embedder": True}, {"model.patch_generator.video_embedder", "model.visual"})
    assert section["modules"] == ["model.patch_generator.video_embedder"]
    _, notes = translate({"freeze_video_embedder": True})
    assert notes == ("`freeze_video_embedder: true` dropped: this model has no patch_generator.video_embedder",)
