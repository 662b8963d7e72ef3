"""Selectors written for another transformers release, moved onto the installed release's module tree.

transformers 5.24 nests the Qwen-Omni thinker's towers under ``model``, so a recipe written for
5.18 (nemo-automodel 0.7.0's pin) that says ``freeze_modules: [{path: thinker.visual}]`` matches no
module under 5.24 and the framework rejects it. The installed release's own conversion mapping
(:attr:`~mmfreeze.models.structure.ModelStructure.checkpoint_renames`) says where the checkpoint's
``thinker.visual`` went: ``thinker.model.visual``.

A selector is moved only when it matches no module of the installed release and its renamed form
does. The move is proven like every rewrite: the section as written, on the model under the
checkpoint's names (the tree the other release builds), freezes exactly the tensors the rewritten
section freezes on the installed one, name for name through the renames. A selector no rename
reaches is left as it is, for the section's own validation to report with its key.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import MigrationError
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.keys import SECTION
from mmfreeze.freeze.selectors import MODULE_SELECTOR_KINDS, ModuleSelector
from mmfreeze.models.renames import Renames
from mmfreeze.models.structure import ModelStructure
from mmfreeze.releases import FrameworkRules
from mmfreeze.resolver.spec import MultimodalModuleSpec

SELECTOR_LISTS = ("freeze_modules", "unfreeze_modules", "modules", "except")
"""The `freeze_config` lists whose entries name module paths: 0.7's two and the new vocabulary's two."""
GLOB_CHARACTERS = "*?["


@dataclass(frozen=True, kw_only=True)
class SelectorMove:
    """One selector value moved: ``freeze_config.freeze_modules[0].path``, from ``old`` to ``new``."""

    list_key: str
    index: int
    kind: str
    """``path`` or ``glob`` (a new-vocabulary plain string is a ``path``)."""
    old: str
    new: str
    plain: bool = False
    """The entry is a plain string (new vocabulary), not a ``{path: X}`` mapping."""

    @property
    def key(self) -> str:
        written = "" if self.plain else f".{self.kind}"
        return f"{SECTION}.{self.list_key}[{self.index}]{written}"

    def describe(self) -> str:
        return f"{self.key}: {self.old} -> {self.new} (transformers' conversion mapping)"


def moved_selectors(section: Any, structure: ModelStructure) -> tuple[SelectorMove, ...]:
    """The selectors of ``section`` that match no module of ``structure`` but match through its
    checkpoint renames; none when the model has no renames or the section is not a mapping."""
    renames = structure.checkpoint_renames
    if not renames.rules or not isinstance(section, Mapping):
        return ()
    moves = []
    for list_key in SELECTOR_LISTS:
        entries = section.get(list_key)
        if not isinstance(entries, Sequence) or isinstance(entries, str):
            continue
        for index, entry in enumerate(entries):
            selector = _selector(entry)
            if selector is None or selector.select(structure.modules):
                continue
            kind, old = ("path", selector.path) if selector.path is not None else ("glob", selector.glob or "")
            new = _renamed(kind, old, renames)
            candidate = ModuleSelector(where="", **{kind: new})
            if new != old and candidate.select(structure.modules):
                moves.append(SelectorMove(list_key=list_key, index=index, kind=kind, old=old, new=new,
                                          plain=isinstance(entry, str)))
    return tuple(moves)


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
    wildcard = min((value.find(c) for c in GLOB_CHARACTERS if c in value), default=len(value))
    head = value[:wildcard].rpartition(".")[0] if wildcard < len(value) else value
    return renames.to_model(head) + value[len(head):] if head else value


def apply_moves(section: Mapping[str, Any], moves: Sequence[SelectorMove]) -> dict[str, Any]:
    """``section`` with each move's value replaced (a copy)."""
    moved = copy.deepcopy(dict(section))
    for move in moves:
        entries = moved[move.list_key]
        entries[move.index] = move.new if move.plain else {move.kind: move.new}
    return moved


def prove_moves(
    section: Mapping[str, Any], moved: Mapping[str, Any], structure: ModelStructure, document: Mapping[str, Any], *,
    source: str, override_specs: Sequence[MultimodalModuleSpec], rules: FrameworkRules,
) -> None:
    """Raise :class:`MigrationError` unless ``section`` on the checkpoint-named model and ``moved`` on
    ``structure`` freeze the same tensors (``document``: the recipe, for its `peft`)."""
    def frozen(on: ModelStructure, written: Mapping[str, Any]) -> frozenset[str]:
        return compute_frozen_set(on, {**document, SECTION: dict(written)}, source=source,
                                  override_specs=override_specs, rules=rules).frozen

    to_model = structure.checkpoint_renames.to_model
    before = frozenset(map(to_model, frozen(structure.with_checkpoint_names(), section)))
    after = frozen(structure, moved)
    if before != after:
        differ = sorted(before ^ after)
        raise MigrationError(
            f"moving its selectors onto transformers' renamed module paths cannot be proven equal: "
            f"{len(differ)} tensors differ (first: {differ[0]}); nothing written, move them by hand",
            source=source, key=SECTION)
