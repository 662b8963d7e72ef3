"""Compile a frozen set into the section nemo-automodel 0.7 runs natively: path and glob selectors.

The reviewed `(modality, role)` section is the source; what the unmodified framework trains is
``freeze_config: {freeze_modules: [...], unfreeze_modules: [...]}``, applied in its order (PEFT
baseline, freeze selectors, unfreeze selectors, which win, then the invariant freezes, which nothing
undoes). A selector takes a module's whole subtree, the root is never selected, and a selector that
selects no parameter is an error (``FRAMEWORK.md``, "Compiling a section").

Before::

    vision: {tower: true, projector: false}      # Qwen3-VL: model.visual holds its mergers
    language_model: false
    modules: [model.language_model.embed_tokens]

After::

    freeze_modules:
      - {path: model.visual.patch_embed}
      - {path: model.visual.pos_embed}
      - {path: model.visual.blocks}
      - {path: model.language_model.embed_tokens}

The fewest selectors (of those, the fewest unfreezes) are found by a walk over the module tree
that, at each module, either leaves the state it inherits, freezes its subtree or unfreezes it
(:meth:`_Tree.best`); a selector per layer
for the same sub-module of every layer is then written as one glob when that glob takes exactly
the same parameters (:func:`_as_globs`). Legacy flags are never written: they match substrings by
accident. The result is planned here; the caller proves it with the framework's rules before
writing it (:mod:`mmfreeze.migrate.native`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Literal

from mmfreeze.exceptions import NotNativelyExpressible
from mmfreeze.freeze.invariants import invariant_freezes
from mmfreeze.freeze.plan import parameters_under_any
from mmfreeze.models.lora import ADAPTER_MARK
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.paths import name_prefixes

Want = Literal["trainable", "frozen", "either"]
Kind = Literal["freeze_modules", "unfreeze_modules"]
_INFEASIBLE = 1 << 30
LAYER_INDEX = re.compile(r"(?<=\.)\d+(?=\.|$)")
"""A layer index: a path component of digits (``blocks.3``)."""


@dataclass(frozen=True)
class NativeSection:
    """A `freeze_config` of 0.7's own selectors: what each list holds, in module order."""

    freeze_modules: tuple[dict[str, str], ...] = ()
    unfreeze_modules: tuple[dict[str, str], ...] = ()

    def as_section(self) -> dict[str, list[dict[str, str]]]:
        """The YAML mapping. Never ``{}``: with no selector key 0.7 defaults ``freeze_vision_tower``
        to true, so a section that freezes nothing is ``freeze_modules: []``."""
        section: dict[str, list[dict[str, str]]] = {}
        if self.freeze_modules or not self.unfreeze_modules:
            section["freeze_modules"] = [dict(entry) for entry in self.freeze_modules]
        if self.unfreeze_modules:
            section["unfreeze_modules"] = [dict(entry) for entry in self.unfreeze_modules]
        return section


def compile_native_section(
    structure: ModelStructure, frozen: frozenset[str], *, lora: bool, source: str | None = None,
) -> NativeSection:
    """Selectors under which 0.7's pipeline leaves exactly ``frozen`` frozen on ``structure``.

    ``structure`` is the trained one (LoRA injected when ``lora``) and ``frozen`` the recipe's
    whole frozen set on it (PEFT baseline, section, invariants). A composite's section reaches only
    the part the framework forwards it to, so selectors are planned on that part, in its own names.
    """
    part = next((p for p in structure.parts if p.freeze_config), None)
    if part is not None:
        head = part.prefix + "."
        structure = structure.part(part)
        frozen = frozenset(name[len(head):] for name in frozen if name.startswith(head))
    tree = _Tree(structure, frozen, lora=lora)
    cost, chosen = tree.best("", "baseline")
    if cost >= _INFEASIBLE:
        raise NotNativelyExpressible(
            f"nemo-automodel 0.7's selectors cannot state this frozen set: {tree.why_not()}", source=source)
    by_kind: dict[Kind, list[str]] = {"freeze_modules": [], "unfreeze_modules": []}
    for kind, path in chosen:
        by_kind[kind].append(path)
    order = {path: index for index, path in enumerate(structure.modules)}
    return NativeSection(**{kind: tuple(_as_globs(sorted(paths, key=order.__getitem__), structure))
                            for kind, paths in by_kind.items()})


class _Tree:
    """The module tree with what each parameter must end as, and the cheapest selectors per subtree."""

    def __init__(self, structure: ModelStructure, frozen: frozenset[str], *, lora: bool) -> None:
        self.structure = structure
        dead = {name for name, _ in invariant_freezes(structure)}
        self.want: dict[str, Want] = {
            info.name: "either" if info.name in dead else "frozen" if info.name in frozen else "trainable"
            for info in structure.parameters
        }
        self.baseline = {info.name: (ADAPTER_MARK in info.name) if lora else info.requires_grad
                         for info in structure.parameters}
        self.children: dict[str, list[str]] = defaultdict(list)
        for path in structure.modules:
            if path and path not in structure.module_aliases:
                self.children[path.rpartition(".")[0]].append(path)
        self.own: dict[str, list[str]] = defaultdict(list)
        for info in structure.parameters:
            self.own[info.name.rpartition(".")[0]].append(info.name)
        self.memo: dict[tuple[str, str], tuple[int, tuple[tuple[Kind, str], ...]]] = {}

    @cached_property
    def under(self) -> Mapping[str, frozenset[str]]:
        """Module path -> every parameter a selector of it takes (tied aliases included)."""
        found: dict[str, set[str]] = defaultdict(set)
        for info in self.structure.parameters:
            for name in info.names:
                for prefix in name_prefixes(name):
                    found[prefix].add(info.name)
        return {path: frozenset(names) for path, names in found.items()}

    def best(self, path: str, inherited: str) -> tuple[int, tuple[tuple[Kind, str], ...]]:
        """Fewest selectors for ``path``'s subtree under ``inherited`` (``baseline`` or ``frozen``)."""
        key = (path, inherited)
        if key not in self.memo:
            self.memo[key] = min(self._options(path, inherited), key=_readability)
        return self.memo[key]

    def _options(self, path: str, inherited: str) -> Iterable[tuple[int, tuple[tuple[Kind, str], ...]]]:
        """A selector here first, so that of equally short answers the outer module wins."""
        selected = self.under.get(path, frozenset()) if path else frozenset()
        if selected:  # not the root, nor a module without parameters: 0.7 rejects those selectors
            if inherited == "baseline":
                cost, chosen = self._descend(path, "frozen")
                yield cost + 1, (("freeze_modules", path), *chosen)
            if all(self.want[name] != "frozen" for name in selected):
                yield 1, (("unfreeze_modules", path),)
        yield self._descend(path, inherited)

    def _descend(self, path: str, state: str) -> tuple[int, tuple[tuple[Kind, str], ...]]:
        """No selector at ``path``: its own parameters keep ``state``, its children choose."""
        if any(self._wrong(name, state) for name in self.own.get(path, ())):
            return _INFEASIBLE, ()
        cost, chosen = 0, []
        for child in self.children.get(path, ()):
            child_cost, child_chosen = self.best(child, state)
            cost += child_cost
            chosen.extend(child_chosen)
        return min(cost, _INFEASIBLE), tuple(chosen)

    def _wrong(self, name: str, state: str) -> bool:
        want = self.want[name]
        trainable = self.baseline[name] if state == "baseline" else False
        return want != "either" and (want == "trainable") != trainable

    def why_not(self) -> str:
        """The first parameter no selector can reach as it must end (a parameter of the root itself)."""
        for name in self.own.get("", ()):
            if self._wrong(name, "baseline"):
                return f"{name} sits on the model's root, which no selector selects, and must end {self.want[name]}"
        return "no combination of module selectors gives it (a tied parameter shared across modules?)"


def _readability(option: tuple[int, tuple[tuple[Kind, str], ...]]) -> tuple[int, int]:
    """Fewest selectors; then fewest unfreezes, since an override makes a reviewer read two lists."""
    cost, chosen = option
    return cost, sum(kind == "unfreeze_modules" for kind, _ in chosen)


def _as_globs(paths: list[str], structure: ModelStructure) -> list[dict[str, str]]:
    """``paths`` as selectors: those that differ only in one layer index, and are every layer of
    that stack, become one glob when it takes exactly the parameters they take."""
    merged = layer_merges(paths, spell=lambda head, tail: head + "*" + tail,
                          accepts=lambda path, glob, members: _same_parameters(glob, members, structure))
    return [{"path": path} if glob is None else {"glob": glob} for path, glob in merged]


def layer_merges(
    paths: list[str], *, spell: Callable[[str, str], str], accepts: Callable[[str, str, list[str]], bool],
) -> list[tuple[str, str | None]]:
    """Each of ``paths`` once, in order: ``(path, None)`` alone, or ``(path, key)`` for the first group
    of three or more paths that differ from it only in one layer index, none merged yet, that
    ``accepts(path, key, members)``; ``key`` is ``spell(text before the index, text after it)``."""
    groups: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        for match in LAYER_INDEX.finditer(path):
            groups[spell(path[:match.start()], path[match.end():])].append(path)
    merged: list[tuple[str, str | None]] = []
    taken: set[str] = set()
    for path in paths:
        if path in taken:
            continue
        key = next((key for key, members in groups.items() if path in members and len(members) > 2
                    and not taken & set(members) and accepts(path, key, members)), None)
        taken.update(groups[key] if key is not None else (path,))
        merged.append((path, key))
    return merged


def _same_parameters(glob: str, members: list[str], structure: ModelStructure) -> bool:
    """Whether ``glob`` over every module path takes exactly the parameters ``members`` take."""
    matched = [path for path in structure.modules if path and fnmatchcase(path, glob)]
    return parameters_under_any(structure, matched).keys() == parameters_under_any(structure, members).keys()
