"""One recipe -> its snapshot: load, freeze (or read the cached frozen set), summarise.

A run first parses every recipe and builds, in parallel, the distinct models whose frozen sets
are not cached, computing those sets as the models arrive (:func:`prefetch`); then each recipe's
snapshot is one cache lookup. Recipes with the same model and freezing setup share one record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import ConfigSourceError, EnvironmentBuildError, MmfreezeError
from mmfreeze.freeze.compiler.target import compile_target
from mmfreeze.freeze.recipe_model import recipe_frozen_set
from mmfreeze.models.batch import BuildTick, build_missing
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.framework import TRANSFORMERS_BUILDER, BuilderChoice, built_label, describe_build
from mmfreeze.models.loader import ModelRequest, find_config, load_structure, structure_source
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import Recipe, load_recipe
from mmfreeze.reachability.recipe import probed_request, recipe_reach
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.snapshots.format import Snapshot, describe_config_source
from mmfreeze.settings import LocalModels
from mmfreeze.snapshots.grouping import grouper
from mmfreeze.snapshots.frozen_cache import (
    CachedComputation,
    FailedComputation,
    FrozenSetCache,
    FrozenSetRecord,
    frozen_set_key,
)
from mmfreeze.versions import code_fingerprint

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.reachability.recipe import RecipeReach


@dataclass(frozen=True, kw_only=True)
class LoadingOptions:
    """How recipes are turned into snapshots; the same for every recipe of a run."""

    allowed_targets: Mapping[str, str]
    cache: StructureCache
    frozen_sets: FrozenSetCache
    allow_network: bool = False
    root: Path | None = None
    """The repository root messages name recipes from (default: the working directory)."""
    configs_dir: Path | None = None
    """The repository's model-config folder (``[tool.mmfreeze] configs``)."""
    local_models: LocalModels | None = None
    """Where a recipe's local model directory may be (the repository, ``[tool.mmfreeze.model_folders]``)."""
    documents: YamlDocuments = field(default_factory=YamlDocuments)
    """The run's parsed YAML, shared with discovery: each file is parsed once."""
    recipes: dict[Path, Recipe] = field(default_factory=dict)
    """Recipes already parsed in this run, by path."""
    framework: FrameworkRules = CURRENT_RULES
    """The release the repository trains on (``[tool.mmfreeze] framework``, :func:`framework_rules`)."""
    builder: BuilderChoice = TRANSFORMERS_BUILDER
    """What builds the models (``[tool.mmfreeze] builder``, :func:`mmfreeze.models.framework.choose_builder`)."""

    def request(self, recipe: Recipe) -> ModelRequest:
        """The recipe's model request under this run's builder, probed (a snapshot reports reachability)."""
        return probed_request(recipe, self.builder)

    def recipe(self, path: Path) -> Recipe:
        if path not in self.recipes:
            self.recipes[path] = load_recipe(
                path, allowed_targets=self.allowed_targets, root=self.root, configs_dir=self.configs_dir,
                local_models=self.local_models, documents=self.documents, framework=self.framework,
            )
        return self.recipes[path]

    def structure_key(self, recipe: Recipe) -> str:
        return structure_source(self.request(recipe), allow_network=self.allow_network).key

    def frozen_set_key(self, recipe: Recipe) -> str:
        return frozen_set_key(self.structure_key(recipe), recipe.document, code_fingerprint(), recipe.framework.release,
                              recipe.compiled)


@dataclass(frozen=True, kw_only=True)
class ComputedSnapshot:
    snapshot: Snapshot
    recipe: Recipe
    options: LoadingOptions
    config: Mapping[str, Any]
    """The model's config.json content, as found for the header (a change's cost reads it too)."""

    def frozen_set(self) -> FrozenSetResult:
        """The set with the structure it was computed on (shapes and groups for a change report,
        and its cost). Only a changed snapshot needs it, so it is computed again then rather than
        kept for every recipe."""
        return _compute(self.recipe, self.options)


def prefetch(
    paths: Sequence[Path], options: LoadingOptions, *, workers: int | None = None,
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
                recipe = options.recipe(path)
                cached = options.frozen_sets.get(options.frozen_set_key(recipe)) is not None
            except MmfreezeError:
                continue
            if not cached:
                waiting.setdefault(options.structure_key(recipe), []).append(recipe)
                yield options.request(recipe)

    def compute_waiting(key: str) -> None:
        for recipe in waiting[key]:
            with contextlib.suppress(MmfreezeError):  # the recipe's own step reports it
                _record(recipe, options)

    build_missing(uncached(), options.cache, workers=workers, allow_network=options.allow_network,
                  on_built=compute_waiting, on_tick=on_build)


def compute_snapshot(path: Path, key: str, options: LoadingOptions) -> ComputedSnapshot:
    """The snapshot of the recipe at ``path`` (``key``: its path as stored in the header).

    Raises :class:`~mmfreeze.exceptions.MmfreezeError` subclasses naming the file and key.
    """
    recipe = options.recipe(path)
    record = _record(recipe, options)
    # Only where the config came from: the structure key (a hash of it) is not needed here.
    request = options.request(recipe)
    source = find_config(request, allow_network=options.allow_network)
    config = describe_config_source(source.kind, source.provenance)
    # A local directory is stored by where the settings allow it, never by its absolute path.
    snapshot = record.snapshot(recipe=key, model_id=source.local_label or recipe.model.model_id, config=config,
                               **builder_header(record, request, source.config, target=recipe.model.target))
    return ComputedSnapshot(snapshot=snapshot, recipe=recipe, options=options, config=source.config)


def builder_header(
    record: FrozenSetRecord, request: ModelRequest, config: Mapping[str, Any], *, target: str
) -> dict[str, str]:
    """The header's ``builder`` and ``divergence`` values for one recipe sharing ``record``."""
    return describe_build(record.architecture, record.build_note, request.build, config, target=target,
                          built_by=record.built_by)


def _record(recipe: Recipe, options: LoadingOptions) -> FrozenSetRecord:
    """The recipe's cached computation, computed and stored first when missing; a stored failure
    is raised again, restated for this recipe."""
    memo_key = options.frozen_set_key(recipe)
    record = options.frozen_sets.get(memo_key)
    if record is None:
        record = _computed_or_failed(recipe, options)
        options.frozen_sets.put(memo_key, record)
    if isinstance(record, FailedComputation):
        raise record.error(recipe=recipe.display_path)
    return record


def _computed_or_failed(recipe: Recipe, options: LoadingOptions) -> CachedComputation:
    try:
        result = _compute(recipe, options)
        return FrozenSetRecord.of(result, recipe=recipe.display_path, reach=_reach(recipe, result))
    except (ConfigSourceError, EnvironmentBuildError):
        raise  # where a config is found, and what this machine can import, lie outside the key: never cached
    except MmfreezeError as error:  # everything else is decided by the key: the model, the sections, the code
        return FailedComputation.of(error)


def _reach(recipe: Recipe, result: FrozenSetResult) -> RecipeReach:
    """What the recipe trains and its loss never reaches, per data mix, labelled by resolved module."""
    return recipe_reach(recipe.document, result.structure, result.frozen,
                        group_of=grouper(result.structure, override_specs(recipe.module_overrides)),
                        source=recipe.display_path)


def _compute(recipe: Recipe, options: LoadingOptions) -> FrozenSetResult:
    loaded = load_structure(options.request(recipe), options.cache, allow_network=options.allow_network)
    structure = loaded.structure
    label = built_label(options.builder.label, build_note=structure.build_note, built_by=structure.built_by)
    return recipe_frozen_set(recipe, structure, target=compile_target(recipe.framework, label))
