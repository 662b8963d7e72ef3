"""`--mode preserve`: the simplest new section whose frozen set equals the framework's result.

T is what the framework freezes for the original section (legacy flags, 0.7 selectors or both)
on the trained structure, invariants included. Parameters frozen whatever a section says (before
it runs, or by the invariants) are don't-care; the rest of T must be frozen by the new section
("required"), and everything outside T must stay trainable.

1. Each (modality, role) group and the language model is flagged true when the original froze
   some of it and none of it trains; a group that is frozen except for a part is flagged true with
   that part under `except` when that takes fewer entries than listing its frozen part.
2. The required parameters no flag covers get the fewest `modules:` entries (paths, layer ranges,
   globs; :mod:`mmfreeze.migrate.cover`), none of which touches a trainable parameter.
3. The result is checked against the new engine; a mismatch raises, so a wrong section is never
   written. A section the new vocabulary cannot express (one that makes trainable what was frozen
   before it runs, e.g. `unfreeze_modules` of a base weight under PEFT) is refused the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from mmfreeze.counts import count_text
from mmfreeze.exceptions import MigrationError, NoNewVocabularyEquivalent
from mmfreeze.freeze.engine import BUILT_FROZEN_RULE, PEFT_BASELINE_RULE
from mmfreeze.freeze.targets import FROZEN_BEFORE, LANGUAGE_MODEL_KEY, group_key
from mmfreeze.migrate.compare import group_parameters
from mmfreeze.migrate.cover import cover
from mmfreeze.freeze.keys import SELECTOR_KEYS
from mmfreeze.freeze.legacy import LEGACY_FLAGS
from mmfreeze.migrate.section import (
    FLAG_KEYS, Reasons, SectionInput, SectionMigration, common_notes, entry_key, roles_in_order,
)
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver import ResolvedInventory
from mmfreeze.resolver.labels import describe_total
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules

_START_RULES = (BUILT_FROZEN_RULE, PEFT_BASELINE_RULE)


@dataclass(frozen=True)
class Goal:
    """The framework's frozen set for one section, split by what a new section must do about it."""

    task: SectionInput

    @cached_property
    def frozen(self) -> frozenset[str]:
        return self.task.original.frozen

    @cached_property
    def trainable(self) -> frozenset[str]:
        """Must stay trainable: outside the framework's frozen set."""
        return self.task.targets.all_names - self.frozen

    @cached_property
    def required(self) -> frozenset[str]:
        """Must be frozen by the new section: in the frozen set, not frozen whatever it says."""
        return self.frozen - self.task.targets.fixed.keys()

    @cached_property
    def touched(self) -> frozenset[str]:
        """Frozen last by the original section's own rules (not the start state, not an invariant)."""
        invariant = {name for name, why in self.task.targets.fixed.items() if why != FROZEN_BEFORE}
        rules = self.task.original.plan.rules_by_parameter
        return frozenset(name for name, found in rules.items() if found[0] not in _START_RULES) - invariant


def preserve_section(
    structure: ModelStructure, section: Mapping[str, Any], inventory: ResolvedInventory, *, source: str | None = None,
    rules: FrameworkRules = CURRENT_RULES,
) -> SectionMigration:
    """The section that freezes exactly what ``section`` freezes on ``structure`` (the trained one)."""
    goal = Goal(SectionInput(structure=structure, section=section, inventory=inventory, source=source, rules=rules))
    _refuse_unfreezing(goal)
    new, kept = _flag_section(goal)
    flagged = goal.task.frozen_with(new) - goal.task.targets.fixed.keys()
    modules = cover(goal.task.targets, goal.required - flagged, avoid=goal.trainable)
    exceptions = cover(goal.task.targets, kept, avoid=goal.required)
    new.update({key: entries for key, entries in (("modules", modules), ("except", exceptions)) if entries})
    frozen = goal.task.frozen_with(new)
    if frozen != goal.frozen:
        raise MigrationError(
            f"preserve mode could not reproduce the framework's frozen set ({len(frozen - goal.frozen)} newly "
            f"frozen, {len(goal.frozen - frozen)} newly trainable); nothing written, use --mode intent to review",
            source=source, key="freeze_config",
        )
    legacy = goal.task.vocabulary == "legacy"
    reasons = common_notes(section, inventory)
    _partial_notes(goal, new, reasons)
    _flag_notes(goal, new, reasons)
    why = {entry_key(entry): _reason(goal, entry) for entry in modules} if legacy else {}
    return reasons.migration(new, module_reasons=why)


def _refuse_unfreezing(goal: Goal) -> None:
    unfrozen = goal.task.targets.fixed.keys() & goal.trainable
    if unfrozen:
        groups = group_parameters(unfrozen, goal.task.targets)
        shown = ", ".join(f"{group.label} ({group.describe()})" for group in groups)
        raise NoNewVocabularyEquivalent(
            f"the framework's result makes trainable {describe_total(groups)} that are frozen before the section "
            f"runs (built frozen or by the PEFT baseline): {shown}. The new vocabulary never unfreezes those "
            "(`except` only carves out of what the section itself freezes); nothing written, keep this section "
            "in nemo-automodel's vocabulary",
            source=goal.task.source, key="freeze_config",
        )


def _groups(goal: Goal) -> Iterator[tuple[str, str | None, frozenset[str]]]:
    """(modality or ``language_model``, role, parameters) for every group a flag can freeze."""
    for modality, roles in roles_in_order(goal.task.inventory).items():
        for role in roles:
            yield modality, role, goal.task.targets.role_names(modality, role)
    yield LANGUAGE_MODEL_KEY, None, goal.task.targets.language_model


def _flag_section(goal: Goal) -> tuple[dict[str, Any], frozenset[str]]:
    """Role flags and ``language_model``, and what `except` must keep trainable inside them."""
    section: dict[str, Any] = {}
    kept: set[str] = set()
    for modality, role, names in _groups(goal):
        flag, exception = _decide(goal, names)
        kept |= exception
        if role is None:
            section[modality] = flag
        else:
            section.setdefault(modality, {})[role] = flag
    return section, frozenset(kept)


def _decide(goal: Goal, names: frozenset[str]) -> tuple[bool, frozenset[str]]:
    """Flag a group when the original froze some of it and no part of it trains, or when keeping
    its trainable part as exceptions takes fewer entries than listing its required part."""
    if not names & goal.touched:
        return False, frozenset()
    trainable = names & goal.trainable
    if not trainable:
        return True, frozenset()
    targets = goal.task.targets
    if len(cover(targets, trainable, avoid=goal.required)) < len(cover(targets, names & goal.required, avoid=goal.trainable)):
        return True, trainable
    return False, frozenset()


def _partial_notes(goal: Goal, section: Mapping[str, Any], reasons: Reasons) -> None:
    """Flags left false although the original froze part of the group, and flags with exceptions."""
    for modality, role, names in _groups(goal):
        label = group_key(modality, role)
        flagged = section[modality][role] if role else section[modality]
        hit = names & goal.touched
        kept = names & goal.trainable
        whole = _count(goal, names)
        if hit and not flagged:
            reasons.add(f"{label} written false: the original froze only {_count(goal, hit)} of its {whole}", on=modality)
        elif flagged and kept:
            reasons.add(f"{label} written true with `except`: {_count(goal, kept)} of its {whole} stay trainable",
                        on=modality)


def _flag_notes(goal: Goal, section: Mapping[str, Any], reasons: Reasons) -> None:
    """A legacy flag whose key is written with the other value, and why: the flag froze nothing of
    that group on this model, or PEFT had frozen it first; or other rules froze all of a group the
    flag left alone. (A flag that froze part of its group is a partial note already.)"""
    selectors = any(key in goal.task.section for key in SELECTOR_KEYS)
    rules = goal.task.original.plan.rules_by_parameter
    for flag in LEGACY_FLAGS:
        key = FLAG_KEYS[flag.key]
        if key not in section or (selectors and flag.key not in goal.task.section):
            continue  # a modality the model lacks (dropped, with its note), or a flag a 0.7 section never had
        names = frozenset().union(*(found for written, _, found in _groups(goal) if written == key))
        old = bool(goal.task.section.get(flag.key, flag.default and not selectors))
        new = any(section[key].values()) if isinstance(section[key], dict) else bool(section[key])
        default = "" if flag.key in goal.task.section else " (legacy default)"
        shown = f"{flag.key}: {str(old).lower()}{default} written as {key}: {str(new).lower()}"
        froze = frozenset(name for name in names if any(rule.startswith(f"{flag.key}:") for rule in rules.get(name, ())))
        if old and not new and froze and froze <= _peft_first(rules):
            reasons.add(f"{shown}: under peft every base weight is frozen before freeze_config runs, so the flag "
                        f"decided nothing of the {_count(goal, names)} {key} holds; PEFT keeps them frozen", on=key)
        elif old and not new and not froze:
            reasons.add(f"{shown}: on this model the flag froze none of the {_count(goal, names)} {key} holds "
                        f"(it matches module names containing {' or '.join(map(repr, flag.substrings))})", on=key)
        elif new and not old:
            by = sorted({rules[name][0] for name in names & goal.touched})
            reasons.add(f"{shown}: {'; '.join(by)} froze all of it", on=key)


def _peft_first(rules: Mapping[str, tuple[str, ...]]) -> frozenset[str]:
    return frozenset(name for name, found in rules.items() if found[0] == PEFT_BASELINE_RULE)


def _count(goal: Goal, names: frozenset[str]) -> str:
    numel = goal.task.structure.parameters_by_name
    return count_text(len(names), sum(numel[name].numel for name in names))


def _reason(goal: Goal, entry: Any) -> str:
    rules = goal.task.original.plan.rules_by_parameter
    found = sorted({rules[name][0] for name in goal.task.entry_names(entry) & goal.touched})
    return "legacy " + "; ".join(found) + " also froze this"
