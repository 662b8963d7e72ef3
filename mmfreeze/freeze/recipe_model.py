"""What a recipe tells the model layer: its model request, and its model id for `configs pull`.

``models`` takes plain values and never reads recipes (imports only go down); this is the glue,
in the lowest layer that may import both ``recipes`` and ``models`` without being the pure
resolver. Every caller that loads a recipe's model goes through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mmfreeze.models.framework import TRANSFORMERS_BUILDER, BuilderChoice, BuildSpec, spec_for_recipe
from mmfreeze.models.loader import ModelRequest
from mmfreeze.models.pull import ModelReader, NamedModel
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import Recipe, display_path, read_model_id


def model_request(recipe: Recipe, builder: BuilderChoice = TRANSFORMERS_BUILDER) -> ModelRequest:
    """The model ``recipe`` trains, where its config may be found, and how ``builder`` builds it."""
    return ModelRequest(
        model_id=recipe.model.model_id,
        auto_class=recipe.model.auto_class,
        recipe_dir=recipe.path.parent,
        configs_dir=recipe.configs_dir,
        source=recipe.display_path,
        build=build_spec(builder, recipe),
    )


def build_spec(builder: BuilderChoice, recipe: Recipe) -> BuildSpec:
    """How ``builder`` builds ``recipe``'s model (its ``_target_`` and ``model.force_hf`` matter)."""
    model_section = recipe.document.get("model") if isinstance(recipe.document, Mapping) else None
    return spec_for_recipe(builder, recipe.model.target, model_section)


def recipe_model_reader(documents: YamlDocuments, *, root: Path | None = None) -> ModelReader:
    """Reads a recipe's model id from the run's parsed YAML, without validating its `_target_`
    (pulling a config needs only the id); messages name the file relative to ``root``."""

    def read(path: Path) -> NamedModel:
        shown = display_path(path, root)
        model_id = read_model_id(documents.read(path), source=shown)
        return NamedModel(model_id=model_id, recipe_dir=path.parent, source=shown)

    return read
