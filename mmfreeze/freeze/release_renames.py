"""Selectors written for another transformers release, moved onto the installed release's module tree.

transformers 5.24 nests the Qwen-Omni thinker's towers under ``model``, so a recipe written for
5.18 (nemo-automodel 0.7.0's pin) that says ``freeze_modules: [{path: thinker.visual}]`` matches no
module under 5.24 and the framework rejects it. The installed release's own conversion mapping
(:attr:`~mmfreeze.models.structure.ModelStructure.checkpoint_renames`) says where the checkpoint's
``thinker.visual`` went: ``thinker.model.visual``.

The same holds for LoRA's ``peft.target_modules`` / ``exclude_modules`` patterns, where a pattern
that matches nothing is worse than an error: ``exclude_modules: ["thinker.visual.*"]`` excludes
nothing under 5.24, and adapters land in the tower.

A selector or pattern is moved only when it matches no module of the installed release and its
renamed form does. The move is proven like every rewrite: the recipe as written, on the model under
the checkpoint's names (the tree the other release builds), freezes exactly the tensors, and adds
exactly the adapters, that the rewritten recipe does on the installed one, name for name through
the renames. A selector no rename reaches is left as it is, for the section's own validation to
report with its key.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import MigrationError
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.keys import SECTION
from mmfreeze.freeze.selectors import MODULE_SELECTOR_KINDS, ModuleSelector, literal_head
from mmfreeze.models.lora import wildcard_matches
from mmfreeze.models.renames import Renames
from mmfreeze.models.structure import ModelStructure
from mmfreeze.boundary.releases import FrameworkRules
from mmfreeze.resolver.spec import MultimodalModuleSpec

SELECTOR_LISTS = ("freeze_modules", "unfreeze_modules", "modules", "except")
"""The `freeze_config` lists whose entries name module paths: 0.7's two and the new vocabulary's two."""
PATTERN_LISTS = ("target_modules", "exclude_modules")
"""The `peft` lists of module path patterns."""


@dataclass(frozen=True, kw_only=True)
class SelectorMove:
    """One selector value moved: ``freeze_config.freeze_modules[0].path``, from ``old`` to ``new``."""

    section: str
    """``freeze_config`` or ``peft``."""
    list_key: str
    index: int
    kind: str
    """``path`` or ``glob`` (a new-vocabulary plain string is a ``path``; a LoRA pattern a ``glob``)."""
    old: str
    new: str
    plain: bool = False
    """The entry is a plain string (new vocabulary, LoRA), not a ``{path: X}`` mapping."""

    @property
    def key(self) -> str:
        written = "" if self.plain else f".{self.kind}"
        return f"{self.section}.{self.list_key}[{self.index}]{written}"

    def describe(self) -> str:
        return f"{self.key}: {self.old} -> {self.new} (transformers' conversion mapping)"


def moved_selectors(section: Any, structure: ModelStructure) -> tuple[SelectorMove, ...]:
    """The `freeze_config` selectors that match no module of ``structure`` (LoRA injected, as the
    section finds it) but match through its checkpoint renames."""
    renames = structure.checkpoint_renames
    moves = []
    for list_key, index, entry in _entries(section, SELECTOR_LISTS, renames):
        selector = _selector(entry)
        if selector is None or selector.select(structure.modules):
            continue
        kind, old = ("path", selector.path) if selector.path is not None else ("glob", selector.glob or "")
        new = _renamed(kind, old, renames)
        if new != old and ModuleSelector(where="", **{kind: new}).select(structure.modules):
            moves.append(SelectorMove(section=SECTION, list_key=list_key, index=index, kind=kind, old=old, new=new,
                                      plain=isinstance(entry, str)))
    return tuple(moves)


def moved_patterns(peft: Any, structure: ModelStructure, rules: FrameworkRules) -> tuple[SelectorMove, ...]:
    """The `peft` patterns that match no Linear module of ``structure`` (as built) but match through
    its checkpoint renames, as ``rules``' release matches them."""
    renames = structure.checkpoint_renames
    linear = sorted(structure.linear_modules)

    def matches(pattern: str) -> bool:
        return any(path == pattern or wildcard_matches(pattern, path, rules.release) for path in linear)

    moves = []
    for list_key, index, entry in _entries(peft, PATTERN_LISTS, renames):
        if not isinstance(entry, str) or matches(entry):
            continue
        new = _renamed("glob", entry, renames)
        if new != entry and matches(new):
            moves.append(SelectorMove(section="peft", list_key=list_key, index=index, kind="glob", old=entry, new=new,
                                      plain=True))
    return tuple(moves)


def _entries(section: Any, list_keys: Sequence[str], renames: Renames) -> Sequence[tuple[str, int, Any]]:
    """(list key, index, entry) of ``section``'s lists; none when the model has no renames."""
    if not renames.rules or not isinstance(section, Mapping):
        return ()
    return [(key, index, entry) for key in list_keys
            if isinstance(entries := section.get(key), Sequence) and not isinstance(entries, str)
            for index, entry in enumerate(entries)]


def _selector(entry: Any) -> ModuleSelector | None:
    """A path or glob entry (``X``, ``{path: X}``, ``{glob: X}``); ``None`` for anything else (layer ranges)."""
    if isinstance(entry, str):
        return ModuleSelector(where="", path=entry)
    if isinstance(entry, Mapping) and len(entry) == 1:
        kind, value = next(iter(entry.items()))
        if kind in MODULE_SELECTOR_KINDS and isinstance(value, str):
            return ModuleSelector(where="", **{kind: value})
    return None


def _renamed(kind: str, value: str, renames: Renames) -> str:
    """A path renamed whole; a glob's literal head (up to the last dot before a wildcard) renamed."""
    if kind == "path":
        return renames.to_model(value)
    literal = literal_head(value)
    head = literal.rpartition(".")[0] if literal != value else value
    return renames.to_model(head) + value[len(head):] if head else value


def apply_moves(document: Mapping[str, Any], moves: Sequence[SelectorMove]) -> dict[str, Any]:
    """``document`` with each move's value replaced (a copy)."""
    moved = copy.deepcopy(dict(document))
    for move in moves:
        entries = moved[move.section][move.list_key]
        entries[move.index] = move.new if move.plain else {move.kind: move.new}
    return moved


def prove_moves(
    document: Mapping[str, Any], moved: Mapping[str, Any], structure: ModelStructure, *,
    source: str, override_specs: Sequence[MultimodalModuleSpec], rules: FrameworkRules,
) -> None:
    """Raise :class:`MigrationError` unless ``document`` on ``structure`` (as built) under its
    checkpoint names and ``moved`` on ``structure`` freeze the same tensors and add the same
    adapters, through the renames."""
    to_model = structure.checkpoint_renames.to_model
    before = compute_frozen_set(structure.with_checkpoint_names(), document, source=source,
                                override_specs=override_specs, rules=rules)
    after = compute_frozen_set(structure, moved, source=source, override_specs=override_specs, rules=rules)
    for what, old, new in (("frozen tensors", before.frozen, after.frozen),
                           ("LoRA adapters", before.adapters or frozenset(), after.adapters or frozenset())):
        if (differ := sorted(frozenset(map(to_model, old)) ^ new)):
            raise MigrationError(
                f"moving its selectors onto transformers' renamed module paths cannot be proven equal: "
                f"{len(differ)} {what} differ (first: {differ[0]}); nothing written, move them by hand",
                source=source, key=SECTION)
