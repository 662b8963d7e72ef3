"""One recipe -> its snapshot: load, freeze (or read the cached frozen set), summarise.

A run first parses every recipe and builds, in parallel, the distinct models whose frozen sets
are not cached, computing those sets as the models arrive (:func:`prefetch`); then each recipe's
snapshot is one cache lookup. Recipes with the same model and freezing setup share one record.
The recipe, its model and its frozen set come from the run's :class:`~mmfreeze.workspace.Workspace`,
which computes each once: a changed recipe's diff and cost read the same result.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mmfreeze.exceptions import ConfigSourceError, EnvironmentBuildError, MmfreezeError
from mmfreeze.models.batch import BuildTick, build_missing
from mmfreeze.models.framework import builder_fields
from mmfreeze.models.loader import ModelRequest, structure_source
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.recipe import Recipe
from mmfreeze.reachability.recipe import RecipeReach, recipe_reach
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.snapshots.format import (
    GroupLines, RateLines, ReachLines, Snapshot, SnapshotHeader, body_lines, describe_config_source,
)
from mmfreeze.snapshots.grouping import grouper
from mmfreeze.snapshots.frozen_cache import (
    CachedComputation,
    FailedComputation,
    FrozenSetCache,
    frozen_set_key,
)
from mmfreeze.versions import code_fingerprint, installed_version
from mmfreeze.workspace import Workspace

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult


def recipe_frozen_set_key(recipe: Recipe, workspace: Workspace, structure_key: str | None = None) -> str:
    """The recipe's frozen-set cache key under the run's builder and settings (``structure_key``:
    its model's, when the caller has it)."""
    if structure_key is None:
        structure_key = structure_source(workspace.request(recipe), allow_network=workspace.allow_network).key
    recorded = workspace.recorded(recipe)
    return frozen_set_key(structure_key, recipe.document, code_fingerprint(), recipe.framework.release,
                          recipe.compiled, recipe.model.target, None if recorded is None else recorded.to_json())


def snapshot_of(
    result: FrozenSetResult, *, recipe: str, model_id: str, config: str, builder: str = "transformers",
    divergence: str = "", reach: RecipeReach | None = None,
) -> Snapshot:
    """The snapshot of one frozen-set computation (``config``: where the model config came from,
    :func:`~mmfreeze.snapshots.format.describe_config_source`; ``builder`` and ``divergence``: see
    :class:`~mmfreeze.snapshots.format.SnapshotHeader`; ``reach``: what the recipe trains and never
    reaches, :func:`mmfreeze.reachability.recipe.recipe_reach`, without which the snapshot says
    nothing of reachability)."""
    structure, frozen_numel = result.structure, result.frozen_numel
    header = SnapshotHeader(
        recipe=recipe, model_id=model_id, config=config, architecture=structure.class_name, builder=builder,
        divergence=divergence, framework=result.rules.describe(), transformers=installed_version("transformers"),
        frozen_tensors=len(result.frozen), trainable_tensors=len(structure.parameters) - len(result.frozen),
        frozen_parameters=frozen_numel, trainable_parameters=structure.total_numel - frozen_numel,
        mixes="" if reach is None else reach.mixes.describe(),
    )
    return Snapshot(
        header=header,
        lines=body_lines(result.frozen, recipe=recipe),
        adapter_lines=None if result.adapters is None else body_lines(result.adapters, recipe=recipe),
        rates=tuple(RateLines(lr_mult=lr, wd_mult=wd, lines=body_lines(names, recipe=recipe))
                    for (lr, wd), names in sorted(result.rates.items())),
        renames=structure.checkpoint_renames,
        reach=() if reach is None else tuple(ReachLines(mix=mix.mix, method=mix.method, not_probed=mix.not_probed, groups=tuple(
            GroupLines(label=group.label, tensors=group.tensors, lines=body_lines(frozenset(group.names), recipe=recipe))
            for group in mix.groups)) for mix in reach.results),
    )


def prefetch(
    paths: Sequence[Path], workspace: Workspace, frozen_sets: FrozenSetCache, *, workers: int | None = None,
    on_build: Callable[[BuildTick], None] | None = None,
) -> None:
    """Parse every recipe once, build the distinct models of those whose frozen set is not cached
    in parallel, and compute each frozen set as soon as its model arrives, so this process works
    while the workers build the rest. Recipes that fail here are skipped: their own step reports
    them with context."""
    waiting: dict[str, list[Recipe]] = {}
    """Structure key -> recipes whose frozen set needs that structure."""

    def uncached() -> Iterator[ModelRequest]:
        # A generator: the builder starts the worker processes (and their torch import) at the
        # first missing structure, while the remaining recipes are still being read here.
        for path in paths:
            try:
                recipe = workspace.recipe(path)
                request = workspace.request(recipe)
                structure = structure_source(request, allow_network=workspace.allow_network).key
                cached = frozen_sets.get(recipe_frozen_set_key(recipe, workspace, structure)) is not None
            except MmfreezeError:
                continue
            if not cached:
                waiting.setdefault(structure, []).append(recipe)
                yield request

    def compute_waiting(key: str) -> None:
        for recipe in waiting[key]:
            with contextlib.suppress(MmfreezeError):  # the recipe's own step reports it
                _record(recipe, workspace, frozen_sets)

    build_missing(uncached(), workspace.structures, workers=workers, allow_network=workspace.allow_network,
                  on_built=compute_waiting, on_tick=on_build)


def compute_snapshot(path: Path, key: str, workspace: Workspace, frozen_sets: FrozenSetCache) -> Snapshot:
    """The snapshot of the recipe at ``path`` (``key``: its path as stored in the header).

    Raises :class:`~mmfreeze.exceptions.MmfreezeError` subclasses naming the file and key.
    """
    recipe = workspace.recipe(path)
    stored = _record(recipe, workspace, frozen_sets)
    return replace(stored, header=replace(stored.header, **_recipe_fields(recipe, key, workspace)))


def _recipe_fields(recipe: Recipe, key: str, workspace: Workspace) -> dict[str, str]:
    """The header fields recipes sharing one computation do not share: the path, the model id and
    where its config came from (only that: the structure key, a hash of it, is not needed here)."""
    source = workspace.config(workspace.request(recipe))
    # A local directory is stored by where the settings allow it, never by its absolute path.
    return {"recipe": key, "model_id": source.local_label or recipe.model.model_id,
            "config": describe_config_source(source.kind, source.provenance)}


def _record(recipe: Recipe, workspace: Workspace, frozen_sets: FrozenSetCache) -> Snapshot:
    """The recipe's cached computation, computed and stored first when missing; a stored failure
    is raised again, restated for this recipe."""
    memo_key = recipe_frozen_set_key(recipe, workspace)
    record = frozen_sets.get(memo_key)
    if record is None:
        record = _computed_or_failed(recipe, workspace)
        frozen_sets.put(memo_key, record)
    if isinstance(record, FailedComputation):
        raise record.error(recipe=recipe.display_path)
    return record


def _computed_or_failed(recipe: Recipe, workspace: Workspace) -> CachedComputation:
    try:
        result = workspace.frozen_set(recipe)
        request = workspace.request(recipe)
        build = builder_fields(result.structure, request, workspace.config(request).config, target=recipe.model.target)
        return snapshot_of(result, **_recipe_fields(recipe, recipe.display_path, workspace), **build,
                           reach=_reach(recipe, result.structure, result.frozen))
    except (ConfigSourceError, EnvironmentBuildError):
        raise  # where a config is found, and what this machine can import, lie outside the key: never cached
    except MmfreezeError as error:  # everything else is decided by the key: the model, the sections, the code
        return FailedComputation.of(error)


def _reach(recipe: Recipe, structure: ModelStructure, frozen: frozenset[str]) -> RecipeReach:
    """What the recipe trains and its loss never reaches, per data mix, labelled by resolved module."""
    return recipe_reach(recipe.document, structure, frozen,
                        group_of=grouper(structure, override_specs(recipe.module_overrides)),
                        source=recipe.display_path)
