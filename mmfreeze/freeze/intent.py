"""What the legacy keys meant, written in the new vocabulary (the intent translation).

``freeze_vision_tower`` meant the vision tower, ``freeze_audio_tower`` the audio tower,
``freeze_language_model`` the language model, ``freeze_video_embedder`` the module
``patch_generator.video_embedder``. Defaults are written out (vision true when the section
exists), values count by truthiness as they always did, ``freeze_embeddings`` is dropped (it was
never read). Every modality and role the model has is written explicitly; a legacy flag for a
modality the model does not have cannot be written and is reported instead.

This is not behaviour-preserving: the legacy engine matched substrings, so it also froze
projectors and embedders whose names contained "vision" or "visual". The differences are data
for a reviewer (see ``mmfreeze migrate --mode intent`` and the snapshot reports).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.freeze.config import LANGUAGE_MODEL_KEY, MODULES_KEY
from mmfreeze.freeze.legacy import IGNORED_KEYS, LEGACY_FLAGS, VIDEO_EMBEDDER_KEY, VIDEO_EMBEDDER_SUBSTRING

TOWER_ROLE = "tower"
_FLAG_MODALITY = {"freeze_vision_tower": "vision", "freeze_audio_tower": "audio"}


@dataclass(frozen=True, kw_only=True)
class IntentTranslation:
    """A new-vocabulary section and what could not be carried over, with why."""

    section: dict[str, Any]
    notes: tuple[str, ...]


def translate_intent(
    legacy: Mapping[str, Any], *, roles_by_modality: Mapping[str, Collection[str]], module_paths: Collection[str]
) -> IntentTranslation:
    """The intent-equivalent new section for a legacy one, for a model with these modalities and paths."""
    section: dict[str, Any] = {
        modality: {role: False for role in sorted(roles)} for modality, roles in sorted(roles_by_modality.items())
    }
    notes = [f"`{key}` removed: the legacy engine never read it" for key in IGNORED_KEYS if key in legacy]
    for flag in LEGACY_FLAGS:
        wanted = bool(legacy.get(flag.key, flag.default))
        modality = _FLAG_MODALITY.get(flag.key)
        if modality is None:
            section[LANGUAGE_MODEL_KEY] = wanted
        elif TOWER_ROLE in section.get(modality, {}):
            section[modality][TOWER_ROLE] = wanted
        elif wanted:
            notes.append(f"`{flag.key}: true` dropped: this model has no {modality} tower")
    if legacy.get(VIDEO_EMBEDDER_KEY, False):
        embedders = sorted(
            path for path in module_paths
            if path == VIDEO_EMBEDDER_SUBSTRING or path.endswith("." + VIDEO_EMBEDDER_SUBSTRING)
        )
        if embedders:
            section[MODULES_KEY] = embedders
        else:
            notes.append(f"`{VIDEO_EMBEDDER_KEY}: true` dropped: this model has no {VIDEO_EMBEDDER_SUBSTRING}")
    return IntentTranslation(section=section, notes=tuple(notes))
