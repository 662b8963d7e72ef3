"""Regex `param_group_overrides` patterns rewritten as `(modality, role)` selectors, when proven equal per tensor.

An entry of nemo-automodel 0.7.0's list takes, among the tensors no earlier entry matched, those
its regex ``re.search``-matches (:mod:`mmfreeze.freeze.param_groups`). A selector can replace the
regex when, on the recipe's trained model, it selects exactly the tensors the regex takes, give or
take tensors an earlier entry already holds. That is checked over every tensor of the model as if
all trained, so it holds whatever the recipe freezes, and then proven: the whole rewritten list,
resolved as `mmfreeze snapshot` and the integration resolve it, puts every tensor in the entry
the original list puts it in.

The candidates, first found wins: a `(modality, role)` group or ``language_model``, a layer range
of one layer stack, one module path (its subtree), one glob over module paths with the layer
numbers as ``*``. A pattern none of them reproduces stays a regex, and the report says why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import MigrationError, RecipeError
from mmfreeze.freeze.optimizer import OptimizerSection, parse_override
from mmfreeze.freeze.param_groups import ParamGroups, assign_groups, select_rates
from mmfreeze.freeze.targets import LANGUAGE_MODEL_KEY, FreezeTargets, LayerStack, group_key
from mmfreeze.migrate.cover import range_keys
from mmfreeze.recipes.optimizer import OVERRIDES, SECTION
from mmfreeze.resolver.paths import name_prefixes


@dataclass(frozen=True, kw_only=True)
class RateRewrite:
    """One pattern entry as a selector: ``selector`` replaces the entry's ``pattern`` key, in its place."""

    index: int
    pattern: str
    selector: Mapping[str, Any]
    """``{role: vision.tower}``, ``{layers: vision.tower, last: 4}``, ``{path: X}`` or ``{glob: X}``."""

    @property
    def key(self) -> str:
        return f"{SECTION}.{OVERRIDES}[{self.index}]"

    def describe(self) -> str:
        shown = ", ".join(f"{key}: {value}" for key, value in self.selector.items())
        return f"{self.key}: pattern {self.pattern!r} -> {shown}"


@dataclass(frozen=True, kw_only=True)
class KeptPattern:
    """One pattern entry no selector reproduces: it stays a regex, and the report says why."""

    index: int
    pattern: str
    reason: str

    def describe(self) -> str:
        return f"{SECTION}.{OVERRIDES}[{self.index}]: pattern {self.pattern!r} kept as a regex: {self.reason}"


@dataclass(frozen=True)
class RatePlan:
    """What MF005 does to one recipe's list: the proven rewrites and the patterns it keeps."""

    rewrites: tuple[RateRewrite, ...] = ()
    kept: tuple[KeptPattern, ...] = ()


def has_entries(document: Mapping[str, Any], *, pattern: bool) -> bool:
    """Whether the recipe's `param_group_overrides` has an entry naming its tensors by a regex
    pattern (``pattern``), or by a selector (not ``pattern``)."""
    section = document.get(SECTION)
    entries = section.get(OVERRIDES) if isinstance(section, Mapping) else None
    return isinstance(entries, list) and any(isinstance(entry, Mapping) and ("pattern" in entry) == pattern
                                             for entry in entries)


def plan_rate_rewrites(entries: Sequence[Any], targets: FreezeTargets, *, source: str) -> RatePlan:
    """Every pattern entry of the list ``entries`` as a selector where one selects what it takes, proven."""
    section = _section(entries, source)
    names = [info.name for info in targets.structure.parameters]
    original = assign_groups(names, names, section.overrides, select_rates(section, targets, source=source))
    taken: set[str] = set()
    rewrites, kept = [], []
    for override in section.overrides:
        takes = frozenset(name for name, found in original.group_of.items() if found.index == override.index)
        if override.pattern is not None:
            selector = next((candidate for candidate in _candidates(takes, targets)
                             if takes and _selects(candidate, targets, source) - taken == takes), None)
            if selector is not None:
                rewrites.append(RateRewrite(index=override.index, pattern=override.pattern, selector=selector))
            else:
                kept.append(KeptPattern(index=override.index, pattern=override.pattern, reason=_why_kept(takes, targets)))
        taken |= takes
    plan = RatePlan(tuple(rewrites), tuple(kept))
    if rewrites:
        _prove(entries, original, plan, targets, names, source=source)
    return plan


def rewritten_entries(entries: Sequence[Mapping[str, Any]], plan: RatePlan) -> list[dict[str, Any]]:
    """The list as the rewritten file must hold it: each rewritten entry's selector in place of its pattern."""
    by_index = {rewrite.index: rewrite for rewrite in plan.rewrites}
    result = []
    for index, entry in enumerate(entries):
        rewrite = by_index.get(index)
        rebuilt: dict[str, Any] = {}
        for key, value in entry.items():
            rebuilt.update(rewrite.selector if rewrite is not None and key == "pattern" else {key: value})
        result.append(rebuilt)
    return result


def _section(entries: Sequence[Any], source: str) -> OptimizerSection:
    return OptimizerSection(target="", overrides=tuple(parse_override(index, entry, source)
                                                       for index, entry in enumerate(entries)))


def _selects(selector: Mapping[str, Any], targets: FreezeTargets, source: str) -> frozenset[str]:
    """What ``selector`` selects, resolved as a recipe's entry is; nothing when it does not resolve."""
    try:
        return select_rates(_section([selector], source), targets, source=source)[0]
    except RecipeError:
        return frozenset()


def _candidates(takes: frozenset[str], targets: FreezeTargets) -> Iterator[dict[str, Any]]:
    """Selectors that might select ``takes``, the most meaningful first (each is checked by the caller)."""
    for modality, roles in targets.roles.items():
        yield from ({"role": group_key(modality, role)} for role in roles)
    yield {"role": LANGUAGE_MODEL_KEY}
    yield from filter(None, (_layer_range(stack, takes, targets) for stack in targets.layer_stacks))
    canonical = [targets.canonical_names[name] for name in sorted(takes)]
    common = _common_prefix(canonical)
    paths = list(name_prefixes(common)) if common else []
    yield from ({"path": path} for path in sorted(paths, key=lambda path: (path in canonical, -len(path))))
    generalized = {_numbers_as_stars(name.rpartition(".")[0]) for name in canonical}
    # One module per layer (``layers.*.mlp.gate``), else the modules the layers share (``layers.*.mlp``).
    yield from ({"glob": glob} for glob in dict.fromkeys([_common_prefix(sorted(generalized))]) if "*" in glob)


def _layer_range(stack: LayerStack, takes: frozenset[str], targets: FreezeTargets) -> dict[str, Any] | None:
    """The range of ``stack``'s layers that holds ``takes``, when they are consecutive."""
    layers = [index for index in stack.indices if targets.names_under([f"{stack.path}.{index}"]) & takes]
    if not layers or layers != [index for index in stack.indices if layers[0] <= index <= layers[-1]]:
        return None
    return {"layers": targets.stack_name(stack), **range_keys(stack, layers)}


def _common_prefix(names: Sequence[str]) -> str:
    """The dotted segments all ``names`` begin with (``""`` when none)."""
    return ".".join(os.path.commonprefix([name.split(".") for name in names]))


def _numbers_as_stars(path: str) -> str:
    return ".".join("*" if segment.isdigit() else segment for segment in path.split("."))


def _why_kept(takes: frozenset[str], targets: FreezeTargets) -> str:
    if not takes:
        return "it takes no tensor (it matches nothing, or earlier entries take all it matches)"
    modules = sorted({_numbers_as_stars(targets.canonical_names[name].rpartition(".")[0]) for name in takes})
    shown = ", ".join(modules[:3]) + (f", ... ({len(modules)} in all)" if len(modules) > 3 else "")
    return (f"it takes {len(takes)} tensors ({shown}), and no role, layer range, module path or glob selects "
            "exactly those")


def _prove(entries: Sequence[Any], before: ParamGroups, plan: RatePlan, targets: FreezeTargets, names: list[str],
           *, source: str) -> None:
    """The rewritten list, parsed and resolved as the snapshot and the integration do, puts every
    tensor (all trainable) in the entry the original puts it in; else nothing is written."""
    rewritten = _section(rewritten_entries(entries, plan), source)
    after = assign_groups(names, names, rewritten.overrides, select_rates(rewritten, targets, source=source))
    moved = sorted(name for name in names if _index(before, name) != _index(after, name))
    if moved:
        raise MigrationError(f"rewriting the regex patterns as selectors would move {len(moved)} tensors to another "
                             f"group (e.g. {moved[0]}); nothing written (please report this recipe)",
                             source=source, key=f"{SECTION}.{OVERRIDES}")


def _index(groups: ParamGroups, name: str) -> int | None:
    found = groups.group_of.get(name)
    return found.index if found is not None else None
