"""What migrating one legacy `freeze_config` section produces, and the facts shared by both modes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mmfreeze.freeze.legacy import IGNORED_KEYS, LEGACY_FLAGS, VIDEO_EMBEDDER_KEY
from mmfreeze.freeze.new import roles_by_modality
from mmfreeze.resolver import ResolvedInventory

Mode = Literal["preserve", "intent"]
MODES: tuple[Mode, ...] = ("preserve", "intent")

# Legacy key -> the new key its comment moves to (None: the key is removed, the comment goes above).
KEY_TARGETS: Mapping[str, str | None] = {
    "freeze_vision_tower": "vision",
    "freeze_audio_tower": "audio",
    "freeze_language_model": "language_model",
    VIDEO_EMBEDDER_KEY: "modules",
    **{key: None for key in IGNORED_KEYS},
}
FLAG_MODALITY = {"freeze_vision_tower": "vision", "freeze_audio_tower": "audio"}
EMBEDDINGS_NOTE = "freeze_embeddings removed: the old freezing code never read it (recipes trained with it ignored)"


@dataclass(frozen=True, kw_only=True)
class SectionMigration:
    """A new-vocabulary section for one recipe, why it looks so, and what it changes."""

    section: dict[str, Any]
    """New vocabulary, keys in the documented order (modalities, language_model, modules)."""
    module_reasons: Mapping[str, str] = field(default_factory=dict)
    """`modules:` path -> why it is there (the legacy rule that froze it)."""
    notes: tuple[str, ...] = ()
    """Keys dropped or defaults written out, one sentence each."""
    newly_frozen: frozenset[str] = frozenset()
    newly_trainable: frozenset[str] = frozenset()

    @property
    def preserved(self) -> bool:
        return not self.newly_frozen and not self.newly_trainable


def roles_in_order(inventory: ResolvedInventory) -> dict[str, list[str]]:
    """Modality -> roles, in resolver order; modalities without a role are not addressable."""
    return {modality: found for modality, found in roles_by_modality(inventory).items() if found}


def common_notes(legacy: Mapping[str, Any], inventory: ResolvedInventory) -> list[str]:
    """Notes both modes share: removed keys, defaults written out, flags for modalities the model lacks."""
    notes = []
    if "freeze_embeddings" in legacy:
        notes.append(EMBEDDINGS_NOTE)
    modalities = roles_in_order(inventory)
    for flag in LEGACY_FLAGS:
        modality = FLAG_MODALITY.get(flag.key)
        if modality is None:
            continue
        value = bool(legacy.get(flag.key, flag.default))
        if modality not in modalities and (flag.key in legacy or value):
            shown = f"{flag.key}: {str(value).lower()}" + ("" if flag.key in legacy else " (legacy default)")
            notes.append(f"{shown} dropped: the model has no {modality} modality")
        elif flag.key not in legacy and modality in modalities:
            notes.append(f"{flag.key} was implicit (default {str(flag.default).lower()}); now written out")
    notes.extend(f"{key} dropped: the old code ignored this key" for key in legacy if key not in KEY_TARGETS)
    return notes
