"""`--mode preserve`: the simplest new-vocabulary section whose frozen set equals the legacy one.

Algorithm: T is what the legacy engine froze on the trained structure (LoRA adapters included).
A (modality, role) group, disjoint by resolver ownership, is flagged true when it is non-empty, lies
inside the legacy frozen set and the legacy plan froze some of it; `language_model` likewise. What
of T the flags leave uncovered is covered by the fewest maximal module paths whose parameters are
all frozen under legacy, each with the legacy rule that froze it. The result is verified against
the new engine; a mismatch raises, so a wrong section is never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mmfreeze.exceptions import MigrationError
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.plan import FreezePlan, frozen_after
from mmfreeze.migrate.section import SectionMigration, common_notes, roles_in_order
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver import ResolvedInventory


def preserve_section(
    structure: ModelStructure, legacy: Mapping[str, Any], inventory: ResolvedInventory, *, source: str | None = None
) -> SectionMigration:
    """The section that freezes exactly what ``legacy`` froze on ``structure`` (the trained one)."""
    legacy_plan = plan_legacy_freeze(structure, legacy)
    target = frozen_after(structure, legacy_plan)
    section = _flag_section(legacy_plan, target, inventory)
    covered = frozen_after(structure, plan_new_freeze(structure, section, source=source, inventory=inventory))
    reasons = _cover_remainder(legacy_plan, target, covered, inventory)
    if reasons:
        section["modules"] = list(reasons)
    new_frozen = frozen_after(structure, plan_new_freeze(structure, section, source=source, inventory=inventory))
    if new_frozen != target:
        raise MigrationError(
            f"preserve mode could not reproduce the legacy frozen set ({len(new_frozen - target)} newly frozen, "
            f"{len(target - new_frozen)} newly trainable); nothing written, use --mode intent to review",
            source=source, key="freeze_config",
        )
    notes = common_notes(legacy, inventory) + _partial_notes(legacy_plan, section, inventory)
    return SectionMigration(section=section, module_reasons=reasons, notes=tuple(notes))


def _partial_notes(plan: FreezePlan, section: Mapping[str, Any], inventory: ResolvedInventory) -> list[str]:
    """Flags left false although the legacy plan froze part of the group: the reviewer should know why."""
    raw = inventory.raw_parameter_names
    groups = [(f"{i.spec.modality}.{i.spec.role}", i.parameters) for i in inventory.modules if i.spec.role is not None]
    groups.append(("language_model", inventory.language_model.parameters))
    notes = []
    for label, names in groups:
        hit = sum(raw[name] in plan.frozen for name in names)
        modality, _, role = label.partition(".")
        flagged = section.get(modality, {}).get(role) if role else section.get(modality)
        if 0 < hit and not flagged:
            notes.append(f"{label} written false: legacy froze only {hit} of its {len(names)} parameters")
    return notes


def _flag_section(plan: FreezePlan, target: frozenset[str], inventory: ResolvedInventory) -> dict[str, Any]:
    raw = inventory.raw_parameter_names
    members: dict[tuple[str, str], list[str]] = {}
    for info in inventory.modules:
        if info.spec.role is not None:
            members.setdefault((info.spec.modality, info.spec.role), []).extend(raw[n] for n in info.parameters)
    section: dict[str, Any] = {
        modality: {role: _fully_frozen(members[(modality, role)], plan, target) for role in roles}
        for modality, roles in roles_in_order(inventory).items()
    }
    section["language_model"] = _fully_frozen([raw[n] for n in inventory.language_model.parameters], plan, target)
    return section


def _fully_frozen(names: list[str], plan: FreezePlan, target: frozenset[str]) -> bool:
    """Non-empty, frozen under legacy, and frozen by the legacy plan (not only built frozen)."""
    return bool(names) and all(n in target for n in names) and any(n in plan.frozen for n in names)


def _cover_remainder(
    plan: FreezePlan, target: frozenset[str], covered: frozenset[str], inventory: ResolvedInventory
) -> dict[str, str]:
    """Fewest maximal module paths covering what the plan froze beyond ``covered``, with reasons."""
    under = _raw_names_under_prefixes(inventory)
    addressable = set(inventory.raw_module_paths) | set(inventory.raw_parameter_names)
    remainder = sorted(plan.frozen - covered)
    canonical = _canonical_by_raw(inventory)
    chosen: dict[str, set[str]] = {}
    for name in remainder:
        path = _highest_eligible(canonical[name], under, addressable, target)
        chosen.setdefault(path, set()).add(name)
    return {path: _reason(names, plan) for path, names in sorted(chosen.items(), key=lambda item: _natural(item[0]))}


def _natural(path: str) -> list[tuple[int, int | str]]:
    """Sort key that puts ``layers.2`` before ``layers.10``."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in path.split(".")]


def _highest_eligible(name: str, under: Mapping[str, set[str]], addressable: set[str], target: frozenset[str]) -> str:
    parts = name.split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        if prefix in addressable and under[prefix] <= target:
            return prefix
    return name


def _raw_names_under_prefixes(inventory: ResolvedInventory) -> dict[str, set[str]]:
    """Every dotted prefix of a canonical name -> the raw parameters a `modules:` entry there freezes."""
    under: dict[str, set[str]] = {}
    for name, raw in inventory.raw_parameter_names.items():
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            under.setdefault(".".join(parts[:end]), set()).add(raw)
    return under


def _canonical_by_raw(inventory: ResolvedInventory) -> dict[str, str]:
    canonical: dict[str, str] = {}
    for name, raw in inventory.raw_parameter_names.items():
        canonical.setdefault(raw, name)
    return canonical


def _reason(names: Iterable[str], plan: FreezePlan) -> str:
    rules = sorted({rule for name in names for rule in plan.rules_by_parameter[name]})
    return "legacy " + "; ".join(rules) + " also froze this"
