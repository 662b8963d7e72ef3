"""What migrating one `freeze_config` section produces, what it starts from, and the facts both modes share.

The input is a section in either framework vocabulary, legacy flags or nemo-automodel 0.7's
`freeze_modules` / `unfreeze_modules` (with or without legacy flags). Its meaning is the
framework's result, :func:`mmfreeze.freeze.engine.compute_frozen_set` on the trained structure;
a new section is judged by what the new engine freezes on the same structure, invariants included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.apply import with_invariants
from mmfreeze.freeze.config import FreezeConfig, check_against_model
from mmfreeze.freeze.engine import FrozenSetResult, compute_frozen_set
from mmfreeze.freeze.framework import parse_framework_freeze_config
from mmfreeze.freeze.keys import (
    FRAMEWORK_KEYS,
    IGNORED_KEYS,
    SECTION,
    SELECTOR_KEYS,
    VIDEO_EMBEDDER_KEY,
    Vocabulary,
    detect_vocabulary,
)
from mmfreeze.freeze.legacy import LEGACY_FLAGS
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.plan import frozen_after
from mmfreeze.freeze.targets import LANGUAGE_MODEL_KEY, FreezeTargets, roles_by_modality
from mmfreeze.models.structure import ModelStructure
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from mmfreeze.resolver import ResolvedInventory
from mmfreeze.suggest import did_you_mean

Mode = Literal["preserve", "intent"]
MODES: tuple[Mode, ...] = ("preserve", "intent")
Entry = str | dict[str, Any]
"""One `modules:` / `except:` entry as written: a path, or a ``{glob: ...}`` / ``{layers: ...}`` mapping."""

# Framework key -> the new key its comment moves to (None: the key is removed, the comment goes above).
KEY_TARGETS: Mapping[str, str | None] = {
    "freeze_vision_tower": "vision",
    "freeze_audio_tower": "audio",
    "freeze_language_model": "language_model",
    VIDEO_EMBEDDER_KEY: "modules",
    "freeze_modules": "modules",
    "unfreeze_modules": "except",
    **{key: None for key in IGNORED_KEYS},
}
FLAG_MODALITY = {"freeze_vision_tower": "vision", "freeze_audio_tower": "audio"}
FLAG_KEYS = {**FLAG_MODALITY, "freeze_language_model": LANGUAGE_MODEL_KEY}
"""Legacy flag -> the new key written in its place."""
EMBEDDINGS_NOTE = "freeze_embeddings removed: the old freezing code never read it (recipes trained with it ignored)"
MIGRATABLE_KEYS = (*FRAMEWORK_KEYS, *IGNORED_KEYS)
"""Keys a section to migrate may have: nemo-automodel 0.7's six, and ``freeze_embeddings``, which
0.6 accepted (and ignored) and many recipes carry. Anything else is a typo or a key nothing read."""


@dataclass(frozen=True, kw_only=True)
class SectionMigration:
    """A new-vocabulary section for one recipe, why it looks so, and what it changes."""

    section: dict[str, Any]
    """New vocabulary, keys in the documented order (modalities, language_model, modules, except)."""
    module_reasons: Mapping[str, str] = field(default_factory=dict)
    """`modules:` entry (:func:`entry_key`) -> why it is there (the legacy rule that froze it)."""
    notes: tuple[str, ...] = ()
    """Keys dropped or defaults written out, one sentence each."""
    comments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The notes a reviewer would question (a flag turned false, a key dropped, a value changed),
    by the written key they explain; ``freeze_config``: the section as a whole. Each is written as
    a comment above that key (the section's: its first lines), so the file says why, too."""
    newly_frozen: frozenset[str] = frozenset()
    newly_trainable: frozenset[str] = frozenset()

    @property
    def preserved(self) -> bool:
        return not self.newly_frozen and not self.newly_trainable


@dataclass(frozen=True)
class SectionInput:
    """One framework-vocabulary section on the structure it trains (LoRA injected when the recipe has `peft:`)."""

    structure: ModelStructure
    section: Mapping[str, Any]
    inventory: ResolvedInventory
    """Resolved on ``structure`` with the recipe's `multimodal` overrides, as the engine resolves it."""
    source: str | None = None
    rules: FrameworkRules = CURRENT_RULES
    """The release the repository trains on, whose rules read the section."""

    @cached_property
    def vocabulary(self) -> Vocabulary:
        return check_migratable(self.section, source=self.source)

    @cached_property
    def as_trained(self) -> Mapping[str, Any]:
        """The section as the code that trained it read it: without the keys that code ignored
        (``freeze_embeddings``), which 0.7 rejects and `migrate` exists to remove."""
        return {key: value for key, value in self.section.items() if key not in IGNORED_KEYS}

    @cached_property
    def original(self) -> FrozenSetResult:
        """The framework's result for the section (its release's rules, invariants last)."""
        if self.vocabulary == "selectors":
            self._check_selectors()
        # A framework-vocabulary section: only a new-vocabulary one resolves modules, so no overrides.
        return compute_frozen_set(self.structure, {SECTION: self.as_trained}, source=self.source or SECTION,
                                  override_specs=(), rules=self.rules)

    @cached_property
    def call_frozen(self) -> frozenset[str]:
        """What a direct call of the framework's ``apply_parameter_freezing`` freezes with the
        section: the release's rules without the invariant freezes (``_apply_trainability_policy``
        applies those; the function itself does not)."""
        return compute_frozen_set(self.structure, {SECTION: self.as_trained}, source=self.source or SECTION,
                                  override_specs=(), invariants=False, rules=self.rules).frozen

    def _check_selectors(self) -> None:
        """A 0.7 selector that matches nothing, named with a did-you-mean (the framework rejects it too)."""
        config = parse_framework_freeze_config(self.as_trained, self.rules, source=self.source)
        check_against_model(FreezeConfig(modules=(*config.freeze_modules, *config.unfreeze_modules)), self.targets,
                            source=self.source)

    @cached_property
    def targets(self) -> FreezeTargets:
        return FreezeTargets(structure=self.structure, inventory=self.inventory)

    def frozen_with(self, new_section: Mapping[str, Any]) -> frozenset[str]:
        """What ``new_section`` freezes at runtime: frozen before it, its own plan, the invariants."""
        plan = plan_new_freeze(self.structure, new_section, source=self.source, inventory=self.inventory)
        return frozen_after(self.structure, with_invariants(self.structure, plan))

    def entry_names(self, entry: Entry) -> frozenset[str]:
        """The parameters one `modules:` entry selects."""
        return plan_new_freeze(self.structure, {"modules": [entry]}, source=self.source, inventory=self.inventory).frozen


def check_migratable(section: Any, *, source: str | None = None) -> Vocabulary:
    """The section's vocabulary; an unknown key (a typo such as ``freeze_vison_tower``) is an
    input error with a did-you-mean, though the snapshot path lets 0.6's rules ignore it."""
    vocabulary = detect_vocabulary(section, source=source)
    if vocabulary in ("legacy", "selectors"):
        for key in section:
            if key not in MIGRATABLE_KEYS:
                raise FreezeConfigError(
                    f"unknown key{did_you_mean(str(key), MIGRATABLE_KEYS)}; nemo-automodel 0.7 rejects it and 0.6 "
                    f"ignored it, so migrating it would guess; valid keys: {', '.join(MIGRATABLE_KEYS)}",
                    source=source, key=f"{SECTION}.{key}",
                )
    return vocabulary


def roles_in_order(inventory: ResolvedInventory) -> dict[str, list[str]]:
    """Modality -> roles, in resolver order; modalities without a role are not addressable."""
    return {modality: found for modality, found in roles_by_modality(inventory).items() if found}


def entry_key(entry: Entry) -> str:
    """A stable text for a `modules:` / `except:` entry (the path itself for a plain path)."""
    return entry if isinstance(entry, str) else json.dumps(entry, sort_keys=True)


def comment_targets(keys: Iterable[str | None], section: Mapping[str, Any]) -> dict[str | None, str | None]:
    """Each framework key whose comments move -> the key of the new ``section`` they move to
    (:data:`KEY_TARGETS`), ``None`` where it has no successor there (its comments go above)."""
    return {key: KEY_TARGETS.get(key) if KEY_TARGETS.get(key) in section else None for key in keys}


@dataclass
class Reasons:
    """A migration's notes for the report, and those that are also comments in the file."""

    notes: list[str] = field(default_factory=list)
    comments: dict[str, list[str]] = field(default_factory=dict)

    def add(self, text: str, *, on: str | None = None) -> None:
        """A note; ``on``: the written key it explains, where it is a comment too (:attr:`SectionMigration.comments`)."""
        self.notes.append(text)
        if on is not None:
            self.comments.setdefault(on, []).append(text)

    def migration(self, section: dict[str, Any], **fields: Any) -> SectionMigration:
        return SectionMigration(section=section, notes=tuple(self.notes),
                                comments={key: tuple(texts) for key, texts in self.comments.items()}, **fields)


def common_notes(section: Mapping[str, Any], inventory: ResolvedInventory) -> Reasons:
    """Notes both modes share: removed keys (a comment on the section), defaults written out, flags
    for modalities the model lacks (a comment on the section)."""
    notes = Reasons()
    if "freeze_embeddings" in section:
        notes.add(EMBEDDINGS_NOTE, on=SECTION)
    modalities = roles_in_order(inventory)
    selectors = any(key in section for key in SELECTOR_KEYS)
    for flag in LEGACY_FLAGS:
        modality = FLAG_MODALITY.get(flag.key)
        if modality is None:
            continue
        default = flag.default and not selectors
        value = bool(section.get(flag.key, default))
        if modality not in modalities and (flag.key in section or value):
            shown = f"{flag.key}: {str(value).lower()}" + ("" if flag.key in section else " (legacy default)")
            notes.add(f"{shown} dropped: the model has no {modality} modality", on=SECTION)
        elif flag.key not in section and modality in modalities and not selectors:
            notes.add(f"{flag.key} was implicit (default {str(flag.default).lower()}); now written out")
    return notes
