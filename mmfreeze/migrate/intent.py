"""`--mode intent`: write what the legacy keys meant, and list every difference from what they did.

``freeze_vision_tower`` -> ``vision.tower`` (default true), ``freeze_audio_tower`` -> ``audio.tower``,
``freeze_language_model`` -> ``language_model``, ``freeze_video_embedder`` -> the module paths ending
in ``patch_generator.video_embedder``. Every role the model has is written, unnamed ones false.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmfreeze.freeze.legacy import LEGACY_FLAGS, VIDEO_EMBEDDER_KEY, VIDEO_EMBEDDER_SUBSTRING, plan_legacy_freeze
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.plan import frozen_after
from mmfreeze.migrate.section import FLAG_MODALITY, SectionMigration, common_notes, roles_in_order
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver import ResolvedInventory

INTENDED_ROLE = "tower"


def intent_section(
    structure: ModelStructure, legacy: Mapping[str, Any], inventory: ResolvedInventory, *, source: str | None = None
) -> SectionMigration:
    """The literal translation of ``legacy``, with the parameters it freezes differently."""
    section, notes = _translate(legacy, inventory)
    legacy_frozen = frozen_after(structure, plan_legacy_freeze(structure, legacy))
    new_frozen = frozen_after(structure, plan_new_freeze(structure, section, source=source, inventory=inventory))
    return SectionMigration(
        section=section,
        notes=tuple(common_notes(legacy, inventory) + notes),
        newly_frozen=new_frozen - legacy_frozen,
        newly_trainable=legacy_frozen - new_frozen,
    )


def _translate(legacy: Mapping[str, Any], inventory: ResolvedInventory) -> tuple[dict[str, Any], list[str]]:
    flags = {FLAG_MODALITY[f.key]: bool(legacy.get(f.key, f.default)) for f in LEGACY_FLAGS if f.key in FLAG_MODALITY}
    notes = []
    section: dict[str, Any] = {}
    for modality, roles in roles_in_order(inventory).items():
        wanted = flags.get(modality, False)
        if wanted and INTENDED_ROLE not in roles:
            notes.append(f"{modality} has no {INTENDED_ROLE!r} role (roles: {', '.join(roles)}); nothing of it is frozen")
        section[modality] = {role: wanted and role == INTENDED_ROLE for role in roles}
    section["language_model"] = bool(legacy.get("freeze_language_model", False))
    if legacy.get(VIDEO_EMBEDDER_KEY, False):
        paths = _video_embedder_paths(inventory)
        if paths:
            section["modules"] = paths
        else:
            notes.append(f"{VIDEO_EMBEDDER_KEY}: true dropped: the model has no {VIDEO_EMBEDDER_SUBSTRING} module")
    return section, notes


def _video_embedder_paths(inventory: ResolvedInventory) -> list[str]:
    return sorted(
        path for path in inventory.raw_module_paths
        if path == VIDEO_EMBEDDER_SUBSTRING or path.endswith("." + VIDEO_EMBEDDER_SUBSTRING)
    )
