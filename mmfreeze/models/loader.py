"""Model request -> model config -> meta-device model -> structure, sharing builds between recipes.

A :class:`ModelRequest` carries what a recipe says about its model; this layer never reads
recipes (:func:`mmfreeze.freeze.recipe_model.model_request` makes one from a recipe).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import MissingModelConfigError, ModelBuildError, NoTransformersClass
from mmfreeze.models.cache import StructureCache, structure_key
from mmfreeze.models.config_sources import ModelConfigSource, find_model_config
from mmfreeze.recipes.composite import DRAFTER_AUTO_CLASS, DrafterSection
from mmfreeze.models.framework import TRANSFORMERS_SPEC, BuildSpec, builder_label, framework_class_for
from mmfreeze.models.structure import MixesToProbe, ModelStructure, structure_of
from mmfreeze.memo import memoized
from mmfreeze.settings import LocalModels

if TYPE_CHECKING:
    from torch import nn

    from mmfreeze.models.composite import DrafterBuild
    from mmfreeze.models.probe.run import Prober
    from transformers import PretrainedConfig


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """Which model to build and where its config may be found."""

    model_id: str
    """A Hub id or a local directory holding config.json."""
    auto_class: str
    """The transformers Auto class to build with, e.g. ``AutoModelForImageTextToText``."""
    recipe_dir: Path
    """The directory a relative local ``model_id`` is read from."""
    configs_dir: Path | None
    """The repository's model-config folder, searched after a local directory."""
    local_models: LocalModels | None = None
    """Where a local model directory may be (``None``: anywhere, for library use with no repository)."""
    source: str
    """What messages name (the recipe's display path)."""
    build: BuildSpec = TRANSFORMERS_SPEC
    """Which builder makes it: transformers, or the framework (:mod:`mmfreeze.models.framework`)."""
    drafter: DrafterSection | None = None
    """A composite's second model: the structure is then ``Gemma4WithDrafter``'s (:mod:`.composite`)."""
    probe: MixesToProbe | None = None
    """Also probe what these data mixes' losses reach (:mod:`mmfreeze.models.probe`), as snapshots
    need: a probed structure is its own cache entry (whatever the mixes: it gains those a later request
    asks for), so a caller that needs only names does not pay for it."""


@dataclass(frozen=True, kw_only=True)
class LoadedStructure:
    """A requested model, as pure data."""

    request: ModelRequest
    source: ModelConfigSource
    structure: ModelStructure
    key: str


def find_config(request: ModelRequest, *, allow_network: bool = False) -> ModelConfigSource:
    return find_model_config(
        request.model_id,
        recipe_dir=request.recipe_dir,
        configs_dir=request.configs_dir,
        local_models=request.local_models,
        allow_network=allow_network,
        source=request.source,
    )


@dataclass(frozen=True, kw_only=True)
class StructureSource:
    """What a requested structure is built from, found once: its config (a composite's base's),
    a composite's drafter with its config, and the cache key of the structure."""

    config: ModelConfigSource
    drafter: DrafterBuild | None
    key: str
    """Covers a composite's drafter config and constructor arguments too."""


def structure_source(request: ModelRequest, *, allow_network: bool = False) -> StructureSource:
    """The requested model's configs and the cache key of the structure built from them."""
    source = find_config(request, allow_network=allow_network)
    drafter = find_drafter(request, allow_network=allow_network)
    material: Mapping[str, Any] = source.config if drafter is None else {
        "base": source.config, "drafter": drafter.config, "composite": drafter.section.arguments()}
    return StructureSource(config=source, drafter=drafter,
                           key=structure_key(material, request.auto_class, request.build, probed=request.probe is not None))


def find_drafter(request: ModelRequest, *, allow_network: bool = False) -> DrafterBuild | None:
    """A composite request's drafter with its config, found where the base's is; ``None`` otherwise."""
    from mmfreeze.models.composite import DrafterBuild

    if request.drafter is None:
        return None
    try:
        found = find_config(replace(request, model_id=request.drafter.model_id), allow_network=allow_network)
    except MissingModelConfigError as error:  # the message is the id's; the key is the drafter's
        raise MissingModelConfigError(error.message, model_id=error.model_id, source=error.source,
                                      key="model.drafter_path") from error
    return DrafterBuild(section=request.drafter, config=found.config)


def build_config(config: Mapping[str, Any], *, source: str) -> PretrainedConfig:
    """A transformers config object from config.json content; errors name ``source``."""
    from mmfreeze.models.build import build_transformers_config

    try:
        return build_transformers_config(config)
    except ModelBuildError as error:
        raise type(error)(error.message, source=source) from error


def build_requested_model(request: ModelRequest, config: ModelConfigSource) -> nn.Module:
    """The requested model, built on the meta device from the config found for it."""
    drafter = find_drafter(request)
    if drafter is not None:
        from mmfreeze.models.composite import build_composite

        base, drafter_model = _composite_parts(config.config, request.auto_class, drafter, source=request.source,
                                               build=request.build)
        return build_composite(base.model, drafter_model.model, drafter.section, source=request.source)
    return build_live(config.config, request.auto_class, source=request.source, build=request.build).model


@dataclass(frozen=True)
class LiveModel:
    """A model built on meta, and how: a fallback's reason, or the framework's stand-in label."""

    model: nn.Module
    build_note: str = ""
    built_by: str = ""

    def structure(self) -> ModelStructure:
        """Its structure, with the checkpoint renames a snapshot records (only built models need them)."""
        from mmfreeze.models.conversion import checkpoint_renames

        return replace(structure_of(self.model), build_note=self.build_note, built_by=self.built_by,
                       checkpoint_renames=checkpoint_renames(self.model))


def build_live(config: Mapping[str, Any], auto_class: str, *, source: str, build: BuildSpec) -> LiveModel:
    """The model ``build`` makes from config.json content, on the meta device."""
    from mmfreeze.models.framework_build import build_framework_model, effective_spec

    effective = effective_spec(config, auto_class, build)
    if effective.kind == "framework":
        built = build_framework_model(config, auto_class, effective, source=source)
        return built if effective == build else replace(built, built_by=builder_label(effective))
    return LiveModel(build_model(config, auto_class, source=source))


def _composite_parts(
    config: Mapping[str, Any], auto_class: str, drafter: DrafterBuild, *, source: str, build: BuildSpec
) -> tuple[LiveModel, LiveModel]:
    """A composite's base and drafter, each built as the framework loads it alone."""
    from mmfreeze.models.composite import require_framework

    require_framework(source=source)  # before two builds that could not be used
    base = build_live(config, auto_class, source=source, build=build)
    return base, build_live(drafter.config, DRAFTER_AUTO_CLASS, source=source, build=build)


def build_model(config: Mapping[str, Any], auto_class: str, *, source: str) -> nn.Module:
    """A model built on the meta device from config.json content and an Auto class name."""
    from mmfreeze.models.build import build_meta_model, resolve_model_class, transformers_builds

    try:
        if not transformers_builds(config.get("model_type"), auto_class):
            raise NoTransformersClass(no_transformers_class(config, auto_class))
        built_config = build_config(config, source=source)
        return build_meta_model(built_config, resolve_model_class(built_config, auto_class))
    except ModelBuildError as error:
        raise type(error)(error.message, source=source, key="model") from error


def no_transformers_class(config: Mapping[str, Any], auto_class: str) -> str:
    """Why transformers cannot build this checkpoint, and what would make it buildable."""
    import transformers

    from mmfreeze.models.build import custom_code_advice

    model_type = config.get("model_type")
    architecture = (config.get("architectures") or ["(none)"])[0]
    what = (f"transformers {transformers.__version__} has no class for model_type {model_type!r} under {auto_class} "
            f"(architectures[0]: {architecture})")
    framework = framework_class_for(config)
    if framework is not None:
        return (f"{what}; nemo-automodel builds its own {framework.describe()} for it. With nemo-automodel "
                "installed (pip install --no-deps nemo-automodel), mmfreeze builds that class the framework's way")
    return f"{what}, and nemo-automodel has no class for {architecture}" + custom_code_advice(config)


def build_structure(
    config: Mapping[str, Any], auto_class: str, *, source: str, build: BuildSpec = TRANSFORMERS_SPEC,
    drafter: DrafterBuild | None = None, probe: MixesToProbe | None = None,
    probers: MutableMapping[type, Prober] | None = None,
) -> ModelStructure:
    """The structure of the model ``build`` makes; ``probe``: with what those data mixes' losses
    reach. ``probers``: the probers of this same config, by built class: a probe is a function of
    config, class and mix, so a build of a class found there reuses its probes and shrunken model,
    and a new one adds its own (recipes reach one checkpoint through several builders and Auto
    classes). A composite's probes are its own: its drafter's config and constructor arguments
    decide them too."""
    from mmfreeze.models.probe.run import composite_prober, model_prober

    if drafter is not None:
        from mmfreeze.models.composite import build_composite, composite_structure

        base, drafter_model = _composite_parts(config, auto_class, drafter, source=source, build=build)
        structure = composite_structure(base, drafter_model, drafter.section, source=source)
        if probe is None:
            return structure
        prober = composite_prober(
            base.model, drafter_model.model,
            lambda base_part, drafter_part: build_composite(base_part, drafter_part, drafter.section, source=source))
        return replace(structure, mixes=prober.mixes, probes=prober.probes(probe.among(prober.mixes)))

    live = build_live(config, auto_class, source=source, build=build)
    structure = live.structure()  # before the probes change the model's flags and dtype
    if probe is None:
        return structure
    prober = memoized({} if probers is None else probers, type(live.model), lambda: model_prober(live.model))
    return replace(structure, mixes=prober.mixes, probes=prober.probes(probe.among(prober.mixes)))


def load_structure(request: ModelRequest, cache: StructureCache, *, allow_network: bool = False) -> LoadedStructure:
    """The requested model's structure, from the cache when it has one with what the request needs,
    else built once (an entry short of a mix gains its probe)."""
    found = structure_source(request, allow_network=allow_network)
    needed, probe = build_needed(cache, found.key, request.probe)
    structure = cache.get(found.key)
    if needed or structure is None:
        if (reason := cache.unbuildable.get(found.key)) is not None:
            raise NoTransformersClass(reason, source=request.source, key="model")
        try:
            built = build_structure(found.config.config, request.auto_class, source=request.source,
                                    build=request.build, drafter=found.drafter, probe=probe)
        except NoTransformersClass as error:
            cache.unbuildable.put(found.key, error.message)
            raise
        structure = store_built(cache, found.key, built)
    return LoadedStructure(request=request, source=found.config, structure=structure, key=found.key)


def build_needed(cache: StructureCache, key: str, probe: MixesToProbe | None) -> tuple[bool, MixesToProbe | None]:
    """Whether the structure ``key`` must be built for a request probing ``probe``, and what that
    build probes: the mixes the cached entry has no probe of (whose other probes the new entry
    keeps: :meth:`~mmfreeze.models.structure.ModelStructure.with_probes_of`), or all the request's
    when there is no entry. An entry is read only for a probed request."""
    if not cache.has(key):
        return True, probe
    if probe is None:
        return False, None
    entry = cache.get(key)
    if entry is None:  # damaged or of another format: built again
        return True, probe
    missing = entry.unprobed(probe)
    return bool(missing.named), missing


def store_built(cache: StructureCache, key: str, built: ModelStructure, *, encoded: Any = None) -> ModelStructure:
    """Put a new build of ``key`` into ``cache`` (``encoded``: its JSON, when a worker sent it so),
    with the probes of the entry it replaces, which lacked a mix this build probed."""
    earlier = cache.get(key) if cache.has(key) else None
    if earlier is None:
        cache.put(key, built, encoded=encoded)
        return built
    merged = built.with_probes_of(earlier)
    cache.put(key, merged)
    return merged
