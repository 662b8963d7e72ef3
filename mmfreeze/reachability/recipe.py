"""What one recipe trains and its loss never reaches, per data mix: the model's probes against its trainable set.

A probe (:class:`~mmfreeze.models.structure.Probe`) says which parameters one mix's loss leaves
unreached with every parameter trainable; freezing never adds a path from the loss, nor removes one
to a trainable tensor, so a recipe's unreachable tensors are the probe's names it trains. A LoRA
adapter is reached exactly when the weight it adapts is (it runs in the same forward).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.framework import BuilderChoice
from mmfreeze.models.loader import ModelRequest
from mmfreeze.models.lora import adapted_weight
from mmfreeze.models.structure import ModelStructure, Probe
from mmfreeze.reachability.mix import Mixes, mixes_to_probe, recipe_mixes
from mmfreeze.recipes.recipe import Recipe
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


def probed_request(recipe: Recipe, builder: BuilderChoice | None = None) -> ModelRequest:
    """The recipe's model request (:func:`~mmfreeze.freeze.recipe_model.model_request`), probed for
    the mixes :func:`recipe_reach` reads."""
    return replace(model_request(recipe, builder), probe=mixes_to_probe(recipe.document))


def recipe_reach(
    document: Mapping[str, Any], structure: ModelStructure, frozen: Iterable[str], *,
    group_of: Callable[[str], str], source: str | None = None,
) -> RecipeReach:
    """``structure`` is the trained one (adapters included, probed for the recipe's mixes:
    :func:`~mmfreeze.reachability.mix.mixes_to_probe`), ``frozen`` what the recipe freezes."""
    probes = {probe.mix: probe for probe in structure.probes}
    mixes = recipe_mixes(document, structure.mixes, source=source)
    trainable = {info.name for info in structure.parameters} - set(frozen)
    numel_of = {info.name: info.numel for info in structure.parameters}
    return RecipeReach(mixes=mixes, results=tuple(
        _mix_reach(mix, structure, probes, trainable, numel_of=numel_of, group_of=group_of)
        for mix in mixes.mixes))


def _mix_reach(
    mix: str, structure: ModelStructure, probes: Mapping[str, Probe], trainable: set[str], *,
    numel_of: Mapping[str, int], group_of: Callable[[str], str],
) -> MixReach:
    if mix.count("+") > 1:
        return MixReach(mix=mix, method="", not_probed="a batch with several inputs is not probed yet; each input's own mix is")
    if mix not in structure.mixes:
        return MixReach(mix=mix, method="",
                        not_probed=f"{structure.class_name}'s forward takes no {mix.partition('+')[2] or mix} input")
    probe = probes[mix]  # the structure was loaded for this recipe's mixes (probed_request)
    if probe.error:
        return MixReach(mix=mix, method="", not_probed=probe.error)
    unreached = set(probe.unreached)
    found = {name for name in trainable if adapted_weight(name) in unreached}
    return MixReach(mix=mix, method=probe.method, groups=group_names(found, numel_of=numel_of, group_of=group_of))

