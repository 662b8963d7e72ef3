"""`--mode intent`: write what the framework keys meant, and list every difference from what they did.

``freeze_vision_tower`` -> ``vision.tower`` (default true unless the section has selectors),
``freeze_audio_tower`` -> ``audio.tower``, ``freeze_language_model`` -> ``language_model``,
``freeze_video_embedder`` -> the module paths ending in ``patch_generator.video_embedder``,
``freeze_modules`` -> ``modules`` and ``unfreeze_modules`` -> ``except``, entry by entry. Every role
the model has is written, unnamed ones false. An entry the new vocabulary rejects on this model
(an exception that keeps nothing trainable, e.g. one that undid the PEFT baseline) is dropped with
a note; the differences show what that changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.framework import parse_framework_freeze_config
from mmfreeze.freeze.selectors import ModuleSelector
from mmfreeze.freeze.keys import SECTION, VIDEO_EMBEDDER_KEY
from mmfreeze.freeze.legacy import LEGACY_FLAGS, VIDEO_EMBEDDER_SUBSTRING
from mmfreeze.migrate.section import (
    FLAG_MODALITY, Entry, Reasons, SectionInput, SectionMigration, common_notes, roles_in_order,
)
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver import ResolvedInventory
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules

INTENDED_ROLE = "tower"


def intent_section(
    structure: ModelStructure, section: Mapping[str, Any], inventory: ResolvedInventory, *, source: str | None = None,
    rules: FrameworkRules = CURRENT_RULES,
) -> SectionMigration:
    """The literal translation of ``section``, with the parameters it freezes differently."""
    task = SectionInput(structure=structure, section=section, inventory=inventory, source=source, rules=rules)
    # as preserve mode does: the keys the code that trained it ignored (freeze_embeddings) are dropped, with a note
    config = parse_framework_freeze_config(task.as_trained, task.original.rules, source=source)
    reasons = common_notes(section, inventory)
    new = _translate_flags(config.flags, inventory, reasons)
    modules = [*new.pop("modules", []), *map(_entry, config.freeze_modules)]
    for key, selectors in (("modules", modules), ("except", [*map(_entry, config.unfreeze_modules)])):
        kept, dropped = _accepted(task, new, key, selectors, [*config.freeze_modules, *config.unfreeze_modules])
        new.update({key: kept} if kept else {})
        for note in dropped:
            reasons.add(note, on=SECTION)
    frozen, original = task.frozen_with(new), task.original.frozen
    return reasons.migration(new, newly_frozen=frozen - original, newly_trainable=original - frozen)


def _translate_flags(flags: Mapping[str, bool], inventory: ResolvedInventory, reasons: Reasons) -> dict[str, Any]:
    wanted = {FLAG_MODALITY[f.key]: flags[f.key] for f in LEGACY_FLAGS if f.key in FLAG_MODALITY}
    section: dict[str, Any] = {}
    for modality, roles in roles_in_order(inventory).items():
        frozen = wanted.get(modality, False)
        if frozen and INTENDED_ROLE not in roles:
            reasons.add(f"{modality} has no {INTENDED_ROLE!r} role (roles: {', '.join(roles)}); nothing of it is frozen",
                        on=modality)
        section[modality] = {role: frozen and role == INTENDED_ROLE for role in roles}
    section["language_model"] = flags["freeze_language_model"]
    if flags[VIDEO_EMBEDDER_KEY]:
        paths = _video_embedder_paths(inventory)
        if paths:
            section["modules"] = paths
        else:
            reasons.add(f"{VIDEO_EMBEDDER_KEY}: true dropped: the model has no {VIDEO_EMBEDDER_SUBSTRING} module",
                        on=SECTION)
    return section


def _video_embedder_paths(inventory: ResolvedInventory) -> list[str]:
    return sorted(
        path for path in inventory.raw_module_paths
        if path == VIDEO_EMBEDDER_SUBSTRING or path.endswith("." + VIDEO_EMBEDDER_SUBSTRING)
    )


def _entry(selector: ModuleSelector) -> Entry:
    return selector.path if selector.path is not None else {"glob": selector.glob}


def _accepted(
    task: SectionInput, section: Mapping[str, Any], key: str, entries: list[Entry], selectors: list[ModuleSelector]
) -> tuple[list[Entry], list[str]]:
    """The entries the new vocabulary accepts on this model, one at a time, and a note per dropped one."""
    kept: list[Entry] = []
    notes = []
    for entry in entries:
        try:
            task.frozen_with({**section, key: [*kept, entry]})
        except FreezeConfigError as error:
            origin = next((s.where for s in selectors if _entry(s) == entry), key)
            notes.append(f"{origin} ({entry}) dropped: {error.message}")
            continue
        kept.append(entry)
    return kept, notes
