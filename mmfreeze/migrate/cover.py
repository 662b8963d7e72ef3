"""The fewest `modules:` / `except:` entries that select a set of parameters and avoid another (pure).

Every parameter of ``wanted`` is covered by its highest canonical prefix (a module path, or the
parameter's own name) under which nothing of ``avoid`` lies; parameters in neither set may be
selected or not. Then the chosen paths are written compactly, each step only when it selects
exactly the same modules:

1. whole layers of one layer stack, two or more in a row -> ``{layers: STACK, first|last: N}`` or
   ``{layers: STACK, from: A, to: B}``;
2. the same sub-module of several layers of one stack, where no other module path has that shape
   -> ``{glob: "<stack>.*.<suffix>"}``;
3. everything else -> the path itself.
"""

from __future__ import annotations

from collections.abc import Set
from itertools import groupby

from mmfreeze.freeze.selectors import ModuleSelector
from mmfreeze.freeze.targets import FreezeTargets, LayerStack
from mmfreeze.migrate.section import Entry
from mmfreeze.resolver.paths import is_under, name_prefixes


def cover(targets: FreezeTargets, wanted: Set[str], avoid: Set[str]) -> list[Entry]:
    """Entries selecting all of ``wanted`` and nothing of ``avoid`` (raw parameter names), in path order."""
    if not wanted:
        return []
    paths = _highest_paths(targets, wanted, avoid)
    ranges, paths = _layer_ranges(targets, paths)
    globs, paths = _layer_globs(targets, paths)
    return sorted([*ranges, *globs, *paths], key=lambda entry: natural(_anchor(entry)))


def natural(path: str) -> list[tuple[int, int | str]]:
    """Sort key that puts ``layers.2`` before ``layers.10``."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in path.split(".")]


def _highest_paths(targets: FreezeTargets, wanted: Set[str], avoid: Set[str]) -> set[str]:
    blocked = {prefix for name, raw in targets.inventory.raw_parameter_names.items() if raw in avoid
               for prefix in name_prefixes(name)}
    return {next(p for p in name_prefixes(targets.canonical_names[raw]) if p not in blocked and p in targets.subtree)
            for raw in wanted}


def _layer_ranges(targets: FreezeTargets, paths: set[str]) -> tuple[list[Entry], set[str]]:
    entries: list[Entry] = []
    left = set(paths)
    for stack in targets.layer_stacks:
        for run in _runs(stack, {index for index in stack.indices if f"{stack.path}.{index}" in left}):
            if len(run) >= 2:
                entries.append({"layers": targets.stack_name(stack), **range_keys(stack, run)})
                left -= {f"{stack.path}.{index}" for index in run}
    return entries, left


def _runs(stack: LayerStack, members: set[int]) -> list[list[int]]:
    """The longest runs of consecutive layers of ``stack`` that are all ``members``, in stack order."""
    return [list(run) for inside, run in groupby(stack.indices, key=members.__contains__) if inside]


def range_keys(stack: LayerStack, run: list[int]) -> dict[str, int]:
    """The keys beside ``layers:`` for ``run``, consecutive layers of ``stack``."""
    if run[0] == stack.indices[0]:
        return {"first": len(run)}
    if run[-1] == stack.indices[-1]:
        return {"last": len(run)}
    return {"from": run[0], "to": run[-1]}


def _layer_globs(targets: FreezeTargets, paths: set[str]) -> tuple[list[Entry], set[str]]:
    entries: list[Entry] = []
    left = set(paths)
    for stack in targets.layer_stacks:
        by_suffix: dict[str, set[str]] = {}
        for path in left:
            index, _, suffix = path.removeprefix(stack.path + ".").partition(".")
            if path != stack.path and is_under(path, stack.path) and index.isdigit() and suffix:
                by_suffix.setdefault(suffix, set()).add(path)
        for suffix, members in sorted(by_suffix.items()):
            glob = f"{stack.path}.*.{suffix}"
            selected = ModuleSelector(where="cover", glob=glob).select(targets.module_paths)
            if len(members) >= 2 and set(selected) == members:
                entries.append({"glob": glob})
                left -= members
    return entries, left


def _anchor(entry: Entry) -> str:
    if isinstance(entry, str):
        return entry
    return str(entry.get("glob") or entry["layers"])
