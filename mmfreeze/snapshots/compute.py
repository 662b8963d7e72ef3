"""One recipe -> its snapshot: load, build (or read the cached structure), freeze, summarise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mmfreeze.freeze.engine import FrozenSetResult, compute_frozen_set
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.snapshots.format import Snapshot, SnapshotHeader


@dataclass(frozen=True, kw_only=True)
class LoadingOptions:
    """How recipes are turned into models; the same for every recipe of a run."""

    allowed_targets: Mapping[str, str]
    cache: StructureCache
    allow_network: bool = False


@dataclass(frozen=True, kw_only=True)
class ComputedSnapshot:
    snapshot: Snapshot
    result: FrozenSetResult
    """The frozen set and the trained structure it was computed on (shapes, for counts)."""


def compute_snapshot(path: Path, key: str, options: LoadingOptions) -> ComputedSnapshot:
    """The snapshot of the recipe at ``path`` (``key``: its path as stored in the header).

    Raises :class:`~mmfreeze.exceptions.MmfreezeError` subclasses naming the file and key.
    """
    recipe = load_recipe(path, allowed_targets=options.allowed_targets)
    loaded = load_structure(recipe, options.cache, allow_network=options.allow_network)
    result = compute_frozen_set(loaded.structure, recipe.document, source=recipe.display_path)
    parameters = result.structure.parameters
    frozen_numel = sum(info.numel for info in parameters if info.name in result.frozen)
    header = SnapshotHeader(
        recipe=key,
        model_id=recipe.model.model_id,
        architecture=result.structure.class_name,
        vocabulary=result.vocabulary,
        frozen_tensors=len(result.frozen),
        trainable_tensors=len(parameters) - len(result.frozen),
        frozen_parameters=frozen_numel,
        trainable_parameters=sum(info.numel for info in parameters) - frozen_numel,
    )
    return ComputedSnapshot(snapshot=Snapshot(header=header, frozen=result.frozen), result=result)
