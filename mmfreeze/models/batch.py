"""Load many recipes' structures: one build per distinct config, spread over worker processes.

Recipes that share a checkpoint share one key (config content + Auto class + library versions),
so a corpus costs what its distinct architectures cost. Cache hits never import torch or
transformers. Misses are built in worker processes when there is more than one: the workers are
forked from a forkserver that imported torch and transformers once, so the import is paid once
and its memory (about 0.5 GB for a CUDA build of torch) is shared copy-on-write instead of being
private to every worker. Results do not depend on the worker count: a structure is a pure function
of its key.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.cache import StructureCache, structure_key
from mmfreeze.models.config_sources import ModelConfigSource
from mmfreeze.models.loader import LoadedStructure, build_structure, find_recipe_config
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.recipe import Recipe, load_recipe

PRELOAD = ("torch", "transformers.modeling_utils", "transformers.models.auto.modeling_auto", "mmfreeze.models.loader")


@dataclass(frozen=True)
class _Pending:
    key: str
    recipe: Recipe
    source: ModelConfigSource


def default_workers() -> int:
    return max(1, min(len(os.sched_getaffinity(0)), 8))


def load_structures(
    recipes: Sequence[Recipe],
    cache: StructureCache,
    *,
    workers: int | None = None,
    allow_network: bool = False,
) -> dict[Path, LoadedStructure | MmfreezeError]:
    """Each recipe's structure, or the error that stopped it (the others carry on)."""
    results: dict[Path, LoadedStructure | MmfreezeError] = {}
    pending: dict[str, _Pending] = {}
    found: dict[Path, tuple[Recipe, str, ModelConfigSource]] = {}
    for recipe in recipes:
        try:
            source = find_recipe_config(recipe, allow_network=allow_network)
        except MmfreezeError as error:
            results[recipe.path] = error
            continue
        key = structure_key(source.config, recipe.model.auto_class)
        found[recipe.path] = (recipe, key, source)
        if cache.get(key) is None:
            pending.setdefault(key, _Pending(key, recipe, source))
            if len(pending) == 2 and (workers or default_workers()) > 1:
                _forkserver()  # starts importing torch now, while the remaining recipes are read
    built = _build_all(list(pending.values()), workers or default_workers())
    for key, outcome in built.items():
        if isinstance(outcome, ModelStructure):
            cache.put(key, outcome)
    for path, (recipe, key, source) in found.items():
        outcome = built.get(key) or cache.get(key)
        results[path] = (
            LoadedStructure(recipe=recipe, source=source, structure=outcome, key=key)
            if isinstance(outcome, ModelStructure)
            else _for_recipe(outcome, recipe)
        )
    return results


def _for_recipe(error: MmfreezeError | None, recipe: Recipe) -> MmfreezeError:
    """A shared build's error, restated for each recipe that uses that build."""
    message = error.message if error is not None else "the model could not be built"
    return type(error or MmfreezeError)(message, source=recipe.display_path, key="model")


def _build_all(pending: list[_Pending], workers: int) -> dict[str, ModelStructure | MmfreezeError]:
    if not pending:
        return {}
    jobs = [(p.key, p.source.config, p.recipe.model.auto_class, p.recipe.display_path) for p in pending]
    if workers <= 1 or len(jobs) == 1:
        return dict(_decode(_build_job(job)) for job in jobs)
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=_forkserver()) as pool:
        return dict(_decode(outcome) for outcome in pool.map(_build_job, jobs))


def _forkserver() -> multiprocessing.context.BaseContext:
    """Workers forked from a server that has the libraries imported, never from this process
    (which may hold threads) and never spawned (which would repeat the import per worker).
    Idempotent: the server is started once per process."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    multiprocessing.forkserver.ensure_running()
    return context


def _decode(outcome: tuple[str, Any]) -> tuple[str, ModelStructure | MmfreezeError]:
    key, value = outcome
    return key, ModelStructure.from_json(value) if isinstance(value, Mapping) else value


def _build_job(job: tuple[str, Mapping[str, Any], str, str]) -> tuple[str, dict[str, Any] | MmfreezeError]:
    """Worker entry point: returns plain data (JSON-shaped) so nothing torch-typed crosses processes."""
    key, config, auto_class, display_path = job
    try:
        return key, build_structure(config, auto_class, source=display_path).to_json()
    except MmfreezeError as error:
        return key, error


def prefetch_structures(
    paths: Sequence[Path],
    cache: StructureCache,
    *,
    allowed_targets: Mapping[str, str],
    workers: int | None = None,
    allow_network: bool = False,
) -> dict[Path, Recipe]:
    """Fill ``cache`` for every loadable recipe in ``paths`` before they are processed one by one,
    and return the parsed recipes so they are not parsed again.

    Recipes that fail to load are skipped here: the per-recipe step reports them with context.
    """
    recipes: dict[Path, Recipe] = {}
    for path in paths:
        try:
            recipes[path] = load_recipe(path, allowed_targets=allowed_targets)
        except MmfreezeError:
            continue
    load_structures(list(recipes.values()), cache, workers=workers, allow_network=allow_network)
    return recipes
