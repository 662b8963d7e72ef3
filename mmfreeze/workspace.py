"""One command's run context: assembled once from the repository's settings, shared by every recipe.

`snapshot`, `migrate` and `explain` each used to put together the allowed targets, the release, the
builder (chosen twice by `snapshot`), the caches, the parsed YAML and the recipe rule on their own,
with small differences (migrate's recipes did not know the repository's config folder until the
command patched it into every model request). A :class:`Workspace` holds them once, and per recipe
one memoized computation: the recipe, its model and the frozen set it trains (:meth:`Workspace.frozen_set`),
which the snapshot, its diff and cost, and `explain` all read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.memo import memoized
from mmfreeze.boundary.releases import FrameworkRules, framework_rules
from mmfreeze.freeze.compiler.target import CompileTarget, compile_target
from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.config_sources import ModelConfigSource
from mmfreeze.models.framework import TRANSFORMERS_BUILDER, BuilderChoice, built_label, choose_builder, framework_renames
from mmfreeze.models.loader import LoadedStructure, ModelRequest, find_config, load_structure
from mmfreeze.reachability.recipe import probed_request
from mmfreeze.recipes.discovery import RecipeFinder
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import Recipe, load_recipe, teacher_recipe
from mmfreeze.recipes.targets import DEFAULT_TARGETS
from mmfreeze.settings import Settings

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.memory.recipe import Teacher
    from mmfreeze.models.renames import Renames
    from mmfreeze.models.structure import ModelStructure


@dataclass(kw_only=True)
class Workspace:
    """The settings (command-line values on top) and everything derived from them, for one command."""

    settings: Settings
    builder: BuilderChoice = TRANSFORMERS_BUILDER
    """What builds the models: chosen once per command (:meth:`of`)."""
    structures: StructureCache = field(default_factory=lambda: StructureCache(None))
    documents: YamlDocuments = field(default_factory=YamlDocuments)
    """The run's parsed YAML, shared with discovery: each file is parsed once."""
    allow_network: bool = False
    records: Callable[[Path, str], Renames | None] = lambda recipe, made_for: None
    """The checkpoint renames the snapshot of the recipe at a path records, when that snapshot was
    made where ``made_for`` (a ``compiled_for`` value) names: the snapshot store's
    (:func:`mmfreeze.snapshots.store.recorded_renames`); none without one."""
    _recipes: dict[Path, Recipe] = field(default_factory=dict, repr=False)
    _frozen_sets: dict[Path, FrozenSetResult] = field(default_factory=dict, repr=False)
    _loaded: dict[ModelRequest, LoadedStructure | MmfreezeError] = field(default_factory=dict, repr=False)
    _configs: dict[ModelRequest, ModelConfigSource] = field(default_factory=dict, repr=False)
    _recorded: dict[Path, Renames | None] = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls, settings: Settings, *, cache_dir: Path | None, records: Callable[[Path, str], Renames | None],
        allow_network: bool = False, roundtrip: bool = False,
    ) -> Workspace:
        """The workspace of a command on ``settings``; ``roundtrip``: YAML is parsed with comments and
        positions (a rewriting command)."""
        return cls(settings=settings, builder=choose_builder(settings.builder, settings.builder_fallback),
                   structures=StructureCache(cache_dir), documents=YamlDocuments(settings.root, roundtrip=roundtrip),
                   allow_network=allow_network, records=records)

    @cached_property
    def allowed_targets(self) -> dict[str, str]:
        """The built-in allowlist plus the repository's and the command line's entries."""
        return {**DEFAULT_TARGETS, **self.settings.allow_targets}

    @cached_property
    def framework(self) -> FrameworkRules:
        """The release the repository trains on (``[tool.mmfreeze] framework``)."""
        return framework_rules(self.settings.framework)

    @cached_property
    def finder(self) -> RecipeFinder:
        """The recipe rule, with the repository's exclusions, on the run's parsed YAML."""
        return RecipeFinder(root=self.settings.root, exclude=self.settings.exclude, documents=self.documents)

    def recipe(self, path: Path) -> Recipe:
        """The recipe at ``path``, read once per command."""
        settings = self.settings
        return memoized(self._recipes, path, lambda: load_recipe(
            path, allowed_targets=self.allowed_targets, root=settings.root, configs_dir=settings.configs,
            local_models=settings.local_models, documents=self.documents, framework=self.framework))

    def request(self, recipe: Recipe, *, probed: bool = True) -> ModelRequest:
        """The recipe's model under the run's builder; ``probed``: also what its data mixes' losses
        reach (a snapshot and `explain` report it; a rewrite needs names only)."""
        return probed_request(recipe, self.builder) if probed else model_request(recipe, self.builder)

    def loaded(self, request: ModelRequest) -> LoadedStructure:
        """The requested model with where its config came from, asked for once per command: a
        recipe's rules plan and compile on the same model, `explain` reads it and its frozen set,
        and a build that failed fails again without building."""
        return memoized(self._loaded, request, lambda: load_structure(
            request, self.structures, allow_network=self.allow_network), errors=(MmfreezeError,))

    def structure(self, request: ModelRequest) -> ModelStructure:
        return self.loaded(request).structure

    def config(self, request: ModelRequest) -> ModelConfigSource:
        """Where the requested model's config.json is, and its content: found once per command (a
        snapshot's header, its builder fields and a change's cost all read it)."""
        return memoized(self._configs, request, lambda: find_config(request, allow_network=self.allow_network))

    def frozen_set(self, recipe: Recipe) -> FrozenSetResult:
        """What ``recipe`` trains on the model this run builds (probed), computed once per command."""
        def compute() -> FrozenSetResult:
            structure = self.structure(self.request(recipe))
            return recipe_frozen_set(recipe, structure, target=self.compile_target(structure),
                                     recorded=self.recorded(recipe))

        return memoized(self._frozen_sets, recipe.path, compute)

    def teacher(self, recipe: Recipe) -> Teacher | None:
        """A distillation recipe's teacher (:func:`~mmfreeze.recipes.recipe.teacher_recipe`) on the model
        this run builds for it, what it freezes when the framework shards it, and its config: what the
        memory model sizes beside the student; ``None`` without one."""
        from mmfreeze.memory.recipe import Teacher

        taught = teacher_recipe(recipe, allowed_targets=self.allowed_targets)
        if taught is None:
            return None
        loaded = self.loaded(self.request(taught, probed=False))
        return Teacher(recipe=taught, frozen=recipe_frozen_set(taught, loaded.structure), loaded=loaded)

    def compile_target(self, built: ModelStructure) -> CompileTarget:
        """What a compiled section is proven on here: the repository's release, and the builder that
        really built ``built`` (a fallback to the transformers class is stamped as such)."""
        return compile_target(self.framework, built_label(self.builder.label, build_note=built.build_note,
                                                          built_by=built.built_by))

    def recorded(self, recipe: Recipe) -> Renames | None:
        """For a recipe with compiled sections: the checkpoint renames of the tree they were compiled
        on (what compares them where that tree is not built), read once per command: as the
        snapshot made there records them, else as mmfreeze's record of the framework's classes does
        (:func:`~mmfreeze.models.framework.framework_renames`); ``None`` otherwise."""
        compiled = recipe.compiled

        def read() -> Renames | None:
            if compiled is None:
                return None
            held = self.records(recipe.path, compiled.compiled_for)
            if held is not None:
                return held
            try:
                config = self.config(self.request(recipe)).config
            except MmfreezeError:  # the build says so, for this recipe alone
                return None
            return framework_renames(compiled.compiled_for, config)

        return memoized(self._recorded, recipe.path, read)
