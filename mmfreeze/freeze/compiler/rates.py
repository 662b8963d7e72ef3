"""The rates of a compiled recipe: each selector entry of `param_group_overrides` as a regex
pattern that takes, among the model's tensor names, exactly the tensors it groups (0.7 reads
patterns with ``re.search``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mmfreeze.exceptions import NotNativelyExpressible
from mmfreeze.freeze.compiler.selectors import layer_merges
from mmfreeze.freeze.optimizer import PATTERN_KEY, OptimizerSection
from mmfreeze.freeze.param_groups import ParamGroups
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.paths import name_prefixes


def compile_rates(
    optimizer: OptimizerSection, groups: ParamGroups, structure: ModelStructure, *, source: str,
) -> list[dict[str, Any]]:
    """The source's `param_group_overrides`, each selector entry as a pattern of exactly the tensors
    it groups: the outermost modules that hold nothing else, then single tensors."""
    taken: dict[int, set[str]] = {override.index: set() for override in optimizer.overrides}
    for name, override in groups.group_of.items():
        taken[override.index].add(name)
    names = frozenset(info.name for info in structure.parameters)
    entries = []
    for override in optimizer.overrides:
        pattern = override.pattern if override.pattern is not None else \
            prefix_pattern(taken[override.index], names, source=f"{source}: {override.key}")
        entry: dict[str, Any] = {PATTERN_KEY: pattern, "lr_mult": override.lr_mult}
        if override.wd_mult != 1.0:
            entry["wd_mult"] = override.wd_mult
        entries.append(entry)
    return entries


def prefix_pattern(wanted: frozenset[str] | set[str], names: frozenset[str], *, source: str) -> str:
    """An anchored regex that ``re.search`` matches, among ``names``, on exactly ``wanted``: the
    outermost modules that hold nothing else, then single tensors; the same module of every layer
    as one alternative with ``\\d+`` for the layer index."""
    blocked = {prefix for name in names - set(wanted) for prefix in name_prefixes(name)}
    modules: dict[str, None] = {}
    for name in sorted(wanted):
        module = next((prefix for prefix in name_prefixes(name) if prefix != name and prefix not in blocked), None)
        modules[name if module is None else module] = None
    parts = _layer_alternatives(list(modules), wanted, names)
    pattern = "^" + ("|".join(parts) if len(parts) == 1 else f"(?:{'|'.join(parts)})")
    if _taken(pattern, names) != set(wanted):
        raise NotNativelyExpressible(f"no pattern of module prefixes takes exactly this entry's tensors ({pattern})",
                                     source=source)
    return pattern


def _layer_alternatives(paths: list[str], wanted: frozenset[str] | set[str], names: frozenset[str]) -> list[str]:
    """Each path as a regex alternative (a module: its prefix and a dot; a tensor: its whole name);
    paths that differ only in one layer index become one alternative when it takes no other tensor."""
    def alternative(path: str, escaped: str) -> str:
        return escaped + ("$" if path in names else r"\.")

    merged = layer_merges(paths, spell=lambda head, tail: re.escape(head) + r"\d+" + re.escape(tail),
                          accepts=lambda path, key, _: _taken("^" + alternative(path, key), names) <= set(wanted))
    return list(dict.fromkeys(alternative(path, re.escape(path) if key is None else key) for path, key in merged))


def _taken(pattern: str, names: Iterable[str]) -> set[str]:
    compiled = re.compile(pattern)
    return {name for name in names if compiled.search(name)}
