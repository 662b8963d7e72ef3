"""Model request -> model config -> meta-device model -> structure, sharing builds between recipes.

A :class:`ModelRequest` carries what a recipe says about its model; this layer never reads
recipes (:func:`mmfreeze.freeze.recipe_model.model_request` makes one from a recipe).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import ModelBuildError
from mmfreeze.models.cache import StructureCache, structure_key
from mmfreeze.models.config_sources import ModelConfigSource, find_model_config
from mmfreeze.models.framework import TRANSFORMERS_SPEC, BuildSpec
from mmfreeze.models.structure import ModelStructure, structure_of

if TYPE_CHECKING:
    from torch import nn
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
    source: str
    """What messages name (the recipe's display path)."""
    build: BuildSpec = TRANSFORMERS_SPEC
    """Which builder makes it: transformers, or the framework (:mod:`mmfreeze.models.framework`)."""


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
        allow_network=allow_network,
        source=request.source,
    )


def structure_source(request: ModelRequest, *, allow_network: bool = False) -> tuple[ModelConfigSource, str]:
    """The requested model's config and the cache key of the structure built from it."""
    source = find_config(request, allow_network=allow_network)
    return source, structure_key(source.config, request.auto_class, request.build)


def build_config(config: Mapping[str, Any], *, source: str) -> PretrainedConfig:
    """A transformers config object from config.json content; errors name ``source``."""
    from mmfreeze.models.build import build_transformers_config

    try:
        return build_transformers_config(config)
    except ModelBuildError as error:
        raise type(error)(error.message, source=source) from error


def build_requested_model(request: ModelRequest, config: ModelConfigSource) -> nn.Module:
    """The requested model, built on the meta device from the config found for it."""
    if request.build.kind == "framework":
        from mmfreeze.models.framework_build import build_framework_model

        return build_framework_model(config.config, request.auto_class, request.build, source=request.source).model
    return build_model(config.config, request.auto_class, source=request.source)


def build_model(config: Mapping[str, Any], auto_class: str, *, source: str) -> nn.Module:
    """A model built on the meta device from config.json content and an Auto class name."""
    from mmfreeze.models.build import build_meta_model, resolve_model_class

    built_config = build_config(config, source=source)
    try:
        return build_meta_model(built_config, resolve_model_class(built_config, auto_class))
    except ModelBuildError as error:
        raise type(error)(error.message, source=source, key="model") from error


def build_structure(
    config: Mapping[str, Any], auto_class: str, *, source: str, build: BuildSpec = TRANSFORMERS_SPEC
) -> ModelStructure:
    if build.kind == "framework":
        from mmfreeze.models.framework_build import build_framework_structure

        return build_framework_structure(config, auto_class, build, source=source)
    return structure_of(build_model(config, auto_class, source=source))


def load_structure(request: ModelRequest, cache: StructureCache, *, allow_network: bool = False) -> LoadedStructure:
    """The requested model's structure, from the cache when its key is known, else built once."""
    source, key = structure_source(request, allow_network=allow_network)
    structure = cache.get(key)
    if structure is None:
        structure = build_structure(source.config, request.auto_class, source=request.source, build=request.build)
        cache.put(key, structure)
    return LoadedStructure(request=request, source=source, structure=structure, key=key)
