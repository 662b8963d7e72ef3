"""What one recipe trains and its loss never reaches, per data mix: the model's probes against its trainable set.

A probe (:class:`~mmfreeze.models.structure.Probe`) says which parameters one mix's loss leaves
unreached with every parameter trainable; freezing never adds a path from the loss, nor removes one
to a trainable tensor, so a recipe's unreachable tensors are the probe's names it trains. A LoRA
adapter is reached exactly when the weight it adapts is (it runs in the same forward).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.models.lora import adapted_weight
from mmfreeze.models.structure import ModelStructure, Probe
from mmfreeze.reachability.mix import Mixes, recipe_mixes
from mmfreeze.resolver.labels import ModuleGroup, group_names


@dataclass(frozen=True, kw_only=True)
class MixReach:
    """One mix's result for one recipe."""

    mix: str
    method: str
    """How the probe read the graph; ``""`` when the mix was not probed."""
    groups: tuple[ModuleGroup, ...] = ()
    """The trainable tensors no path from the loss reaches, by resolved module."""
    not_probed: str = ""
    """Why there is no result for this mix (no batch for the class, or every method failed)."""


@dataclass(frozen=True, kw_only=True)
class RecipeReach:
    """A recipe's mixes and, for each, what it trains and never reaches."""

    mixes: Mixes
    results: tuple[MixReach, ...]


def recipe_reach(
    document: Mapping[str, Any], structure: ModelStructure, frozen: Iterable[str], *,
    group_of: Callable[[str], str], source: str | None = None,
) -> RecipeReach:
    """``structure`` is the trained one (adapters included, probed: every mix its forward takes),
    ``frozen`` what the recipe freezes."""
    probes = {probe.mix: probe for probe in structure.probes}
    mixes = recipe_mixes(document, probes, source=source)
    trainable = {info.name for info in structure.parameters} - set(frozen)
    numel_of = {info.name: info.numel for info in structure.parameters}
    return RecipeReach(mixes=mixes, results=tuple(
        _mix_reach(mix, probes, trainable, structure.class_name, numel_of=numel_of, group_of=group_of)
        for mix in mixes.mixes))


def _mix_reach(
    mix: str, probes: Mapping[str, Probe], trainable: set[str], class_name: str, *, numel_of: Mapping[str, int],
    group_of: Callable[[str], str],
) -> MixReach:
    probe = probes.get(mix)
    if probe is None and mix.count("+") > 1:
        return MixReach(mix=mix, method="", not_probed="a batch with several inputs is not probed yet; each input's own mix is")
    if probe is None:
        return MixReach(mix=mix, method="", not_probed=f"{class_name}'s forward takes no {mix.partition('+')[2] or mix} input")
    if probe.error:
        return MixReach(mix=mix, method="", not_probed=probe.error)
    unreached = set(probe.unreached)
    found = {name for name in trainable if adapted_weight(name) in unreached}
    return MixReach(mix=mix, method=probe.method, groups=group_names(found, numel_of=numel_of, group_of=group_of))

