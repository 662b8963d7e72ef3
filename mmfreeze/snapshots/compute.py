"""One recipe -> its snapshot: load, build (or read the cached structure), freeze, summarise."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmfreeze.freeze.engine import FROZEN_SET_INPUTS, FrozenSetResult, compute_frozen_set
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import Recipe, load_recipe
from mmfreeze.snapshots.format import Snapshot, SnapshotHeader


@dataclass(frozen=True, kw_only=True)
class LoadingOptions:
    """How recipes are turned into models; the same for every recipe of a run."""

    allowed_targets: Mapping[str, str]
    cache: StructureCache
    allow_network: bool = False
    recipes: dict[Path, Recipe] = field(default_factory=dict)
    """Recipes already parsed in this run (by the up-front build), by path."""
    frozen_sets: dict[str, FrozenSetResult] = field(default_factory=dict)
    """Frozen sets by everything they depend on (see :func:`frozen_set_key`): recipes that share
    a checkpoint and a freezing setup share one computation, so a corpus costs what its distinct
    setups cost, not what its recipe count costs."""


@dataclass(frozen=True, kw_only=True)
class ComputedSnapshot:
    snapshot: Snapshot
    result: FrozenSetResult
    """The frozen set and the trained structure it was computed on (shapes, for counts)."""


def frozen_set_key(structure_key: str, document: Mapping[str, Any]) -> str:
    """Everything a recipe's frozen set depends on: its model structure and the sections read."""
    sections = {name: document.get(name) for name in FROZEN_SET_INPUTS}
    return structure_key + json.dumps(sections, sort_keys=True, default=str)


def compute_snapshot(path: Path, key: str, options: LoadingOptions) -> ComputedSnapshot:
    """The snapshot of the recipe at ``path`` (``key``: its path as stored in the header).

    Raises :class:`~mmfreeze.exceptions.MmfreezeError` subclasses naming the file and key.
    """
    recipe = options.recipes.get(path) or load_recipe(path, allowed_targets=options.allowed_targets)
    loaded = load_structure(recipe, options.cache, allow_network=options.allow_network)
    memo_key = frozen_set_key(loaded.key, recipe.document)
    if memo_key not in options.frozen_sets:
        options.frozen_sets[memo_key] = compute_frozen_set(loaded.structure, recipe.document, source=recipe.display_path)
    result = options.frozen_sets[memo_key]
    parameters = result.structure.parameters
    frozen_numel = result.frozen_numel
    header = SnapshotHeader(
        recipe=key,
        model_id=recipe.model.model_id,
        architecture=result.structure.class_name,
        vocabulary=result.vocabulary,
        frozen_tensors=len(result.frozen),
        trainable_tensors=len(parameters) - len(result.frozen),
        frozen_parameters=frozen_numel,
        trainable_parameters=result.structure.total_numel - frozen_numel,
    )
    return ComputedSnapshot(snapshot=Snapshot(header=header, frozen=result.frozen), result=result)
