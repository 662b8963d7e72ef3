"""Recipe -> model config -> meta-device model -> structure, sharing builds between recipes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import ModelBuildError
from mmfreeze.models.cache import StructureCache, structure_key
from mmfreeze.models.config_sources import ModelConfigSource, find_model_config
from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.recipes.recipe import Recipe

if TYPE_CHECKING:
    from torch import nn
    from transformers import PretrainedConfig


@dataclass(frozen=True, kw_only=True)
class LoadedStructure:
    """A recipe's model, as pure data."""

    recipe: Recipe
    source: ModelConfigSource
    structure: ModelStructure
    key: str


def find_recipe_config(recipe: Recipe, *, allow_network: bool = False) -> ModelConfigSource:
    return find_model_config(
        recipe.model.model_id,
        recipe_dir=recipe.path.parent,
        configs_dir=recipe.configs_dir,
        allow_network=allow_network,
        source=recipe.display_path,
    )


def structure_source(recipe: Recipe, *, allow_network: bool = False) -> tuple[ModelConfigSource, str]:
    """The recipe's model config and the cache key of the structure built from it."""
    source = find_recipe_config(recipe, allow_network=allow_network)
    return source, structure_key(source.config, recipe.model.auto_class)


def build_config(config: Mapping[str, Any], *, source: str) -> PretrainedConfig:
    """A transformers config object from config.json content."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = config.get("model_type")
    if model_type not in CONFIG_MAPPING:
        raise ModelBuildError(
            f"config.json has model_type {model_type!r}, which this transformers does not know",
            source=source,
        )
    from mmfreeze.models.build import quiet_transformers

    try:
        with quiet_transformers():
            return CONFIG_MAPPING[model_type].from_dict(dict(config))
    except Exception as error:  # transformers validates configs with many exception types
        raise ModelBuildError(f"transformers rejects the config: {type(error).__name__}: {error}", source=source) from error


def build_recipe_model(recipe: Recipe, source: ModelConfigSource) -> nn.Module:
    """The recipe's model, built on the meta device."""
    return build_model(source.config, recipe.model.auto_class, source=recipe.display_path)


def build_model(config: Mapping[str, Any], auto_class: str, *, source: str) -> nn.Module:
    """A model built on the meta device from config.json content and an Auto class name."""
    from mmfreeze.models.build import build_meta_model, resolve_model_class

    built_config = build_config(config, source=source)
    try:
        return build_meta_model(built_config, resolve_model_class(built_config, auto_class))
    except ModelBuildError as error:
        raise ModelBuildError(error.message, source=source, key="model") from error


def build_structure(config: Mapping[str, Any], auto_class: str, *, source: str) -> ModelStructure:
    return structure_of(build_model(config, auto_class, source=source))


def load_structure(recipe: Recipe, cache: StructureCache, *, allow_network: bool = False) -> LoadedStructure:
    """The recipe's model structure, from the cache when its key is known, else built once."""
    source, key = structure_source(recipe, allow_network=allow_network)
    structure = cache.get(key)
    if structure is None:
        structure = build_structure(source.config, recipe.model.auto_class, source=recipe.display_path)
        cache.put(key, structure)
    return LoadedStructure(recipe=recipe, source=source, structure=structure, key=key)
