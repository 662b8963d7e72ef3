"""What a freezing engine decided: which parameters it freezes, and by which rule."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.paths import name_prefixes


@dataclass(frozen=True)
class FreezePlan:
    """Parameters an engine sets ``requires_grad=False`` on, each with the rules that matched it.

    Names are the structure's canonical parameter names. A plan never unfreezes: parameters the
    model created frozen stay frozen whatever the plan says (see :func:`frozen_after`).
    """

    rules_by_parameter: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def frozen(self) -> frozenset[str]:
        # Cached: callers test membership per parameter (a frozen count walks every one of them).
        return frozenset(self.rules_by_parameter)


def plan_from_matches(matches: Iterable[tuple[str, str]]) -> FreezePlan:
    """A plan from ``(parameter name, rule id)`` pairs, rules kept in first-match order."""
    rules: dict[str, list[str]] = {}
    for name, rule in matches:
        kept = rules.setdefault(name, [])
        if rule not in kept:
            kept.append(rule)
    return FreezePlan({name: tuple(found) for name, found in rules.items()})


def frozen_after(structure: ModelStructure, plan: FreezePlan) -> frozenset[str]:
    """Every parameter frozen once ``plan`` is applied: the plan's, plus those built frozen."""
    built_frozen = {info.name for info in structure.parameters if not info.requires_grad}
    return plan.frozen | built_frozen


def parameters_under_any(structure: ModelStructure, module_paths: Iterable[str]) -> dict[str, str]:
    """Parameter name -> the first of ``module_paths`` that contains it (as ``module.parameters()``).

    A parameter is inside a module when any of its names (tied aliases included) lies below the
    module's path; checking each name's dotted prefixes keeps this linear in the parameter count.
    """
    wanted = list(dict.fromkeys(module_paths))
    order = {path: index for index, path in enumerate(wanted)}
    owners: dict[str, str] = {}
    for info in structure.parameters:
        hits = [prefix for name in info.names for prefix in name_prefixes(name) if prefix in order]
        if "" in order:
            hits.append("")
        if hits:
            owners[info.name] = min(hits, key=order.__getitem__)
    return owners

