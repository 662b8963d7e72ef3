"""What a recipe tells the model layer and the engine: its model request, its model id for
`configs pull`, and, given its built structure, its frozen set and its trained model.

``models`` takes plain values and never reads recipes (imports only go down); this is the glue,
in the lowest layer that may import both ``recipes`` and ``models`` without being the pure
resolver. Every caller that loads a recipe's model, or computes what it trains, goes through it:
`snapshot`, `explain` and `migrate` compute the same set the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mmfreeze.models.framework import BuilderChoice, choose_builder, spec_for_recipe
from mmfreeze.models.loader import ModelRequest
from mmfreeze.models.pull import ModelReader, NamedModel
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import Recipe, display_path, read_model_id

if TYPE_CHECKING:
    from mmfreeze.freeze.compiler.target import CompileTarget
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.freeze.optimizer import OptimizerSection
    from mmfreeze.freeze.param_groups import ParamGroups
    from mmfreeze.freeze.targets import FreezeTargets
    from mmfreeze.models.renames import Renames
    from mmfreeze.models.structure import ModelStructure


def recipe_frozen_set(
    recipe: Recipe, structure: ModelStructure, *, target: CompileTarget | None = None, recorded: Renames | None = None,
) -> FrozenSetResult:
    """What ``recipe`` trains on its built ``structure`` (the snapshot's set):
    :func:`source_frozen_set`. A recipe with compiled sections, given the run's ``target``, must
    hold them in step with its source (:func:`mmfreeze.freeze.compiler.recipe.hold_compiled`, with
    the ``recorded`` renames of the builder ``compiled_for`` names), so the set returned is also
    what the stock framework trains."""
    result, grouping = source_frozen_set(recipe, structure)
    if recipe.compiled is not None and target is not None:
        from mmfreeze.freeze.compiler.recipe import hold_compiled

        hold_compiled(recipe, structure, result, grouping, target=target, recorded=recorded)
    return result


RateGrouping = tuple["OptimizerSection", "ParamGroups"]
"""A recipe's optimizer with selector entries, and the groups they take: what the compiler turns into patterns."""


def source_frozen_set(recipe: Recipe, structure: ModelStructure) -> tuple[FrozenSetResult, RateGrouping | None]:
    """What ``recipe``'s `peft`, `freeze_config` and `multimodal` overrides train on ``structure``
    through the engine, with its rates: its optimizer's `param_group_overrides` must each take some
    trainable tensor (:func:`~mmfreeze.freeze.param_groups.check_overrides`), their selectors
    resolved on the trained model with the recipe's overrides. Beside it, the optimizer's selector
    entries with their groups (``None`` without selector entries: nothing for the compiler)."""
    # Imported here: a warm snapshot run imports this module, and never the engine or the resolver.
    from mmfreeze.freeze.engine import compute_frozen_set
    from mmfreeze.freeze.optimizer import parse_optimizer
    from mmfreeze.freeze.param_groups import check_overrides, rates_of, select_rates
    from mmfreeze.resolver.overrides import override_specs

    result = compute_frozen_set(structure, recipe.document, source=recipe.display_path,
                                override_specs=override_specs(recipe.module_overrides), rules=recipe.framework)
    optimizer = parse_optimizer(recipe.document, source=recipe.display_path)
    if optimizer is None or not optimizer.overrides:
        return result, None
    selected = select_rates(optimizer, _targets(recipe, result.structure), source=recipe.display_path) \
        if optimizer.selectors else {}
    names = [info.name for info in result.structure.parameters]
    groups = check_overrides(optimizer, names, frozenset(names) - result.frozen, source=recipe.display_path,
                             selected=selected)
    return replace(result, rates=rates_of(groups)), (optimizer, groups) if optimizer.selectors else None


def rate_targets(recipe: Recipe, structure: ModelStructure) -> FreezeTargets:
    """What the selectors of ``recipe``'s `param_group_overrides` resolve on: its whole trained model
    (LoRA injected) with its `multimodal.modules` overrides, as the optimizer sees it."""
    from mmfreeze.freeze.engine import trained_structure

    trained = trained_structure(structure, recipe.document, source=recipe.display_path, rules=recipe.framework)
    return _targets(recipe, trained)


def _targets(recipe: Recipe, trained: ModelStructure) -> FreezeTargets:
    from mmfreeze.freeze.targets import FreezeTargets
    from mmfreeze.resolver.overrides import override_specs
    from mmfreeze.resolver.resolve import resolve_structure

    return FreezeTargets(structure=trained, inventory=resolve_structure(trained, override_specs=override_specs(
        recipe.module_overrides)))


def recipe_trained_model(recipe: Recipe, structure: ModelStructure) -> FreezeTargets:
    """The recipe's model as its `freeze_config` finds it: ``structure`` with the recipe's LoRA
    adapters, its modules resolved with the recipe's overrides; of a composite, the part its
    `freeze_config` is forwarded to, as a model of its own."""
    found = next((structure.part(part) for part in structure.parts if part.freeze_config), structure)
    return rate_targets(recipe, found)


def model_request(recipe: Recipe, builder: BuilderChoice | None = None) -> ModelRequest:
    """The model ``recipe`` trains, where its config may be found, and how ``builder`` builds it
    (default: the transformers builder, :func:`~mmfreeze.models.framework.choose_builder`; the
    recipe's ``_target_`` and ``model.force_hf`` matter)."""
    builder = builder or choose_builder("transformers")
    model_section = recipe.document.get("model") if isinstance(recipe.document, Mapping) else None
    return ModelRequest(
        model_id=recipe.model.model_id,
        auto_class=recipe.model.auto_class,
        recipe_dir=recipe.path.parent,
        configs_dir=recipe.configs_dir,
        local_models=recipe.local_models,
        source=recipe.display_path,
        build=spec_for_recipe(builder, recipe.model.target, model_section),
        drafter=recipe.model.drafter,
    )


def recipe_model_reader(documents: YamlDocuments, *, root: Path | None = None) -> ModelReader:
    """Reads a recipe's model id from the run's parsed YAML, without validating its `_target_`
    (pulling a config needs only the id); messages name the file relative to ``root``."""

    def read(path: Path) -> NamedModel:
        shown = display_path(path, root)
        model_id = read_model_id(documents.read(path), source=shown)
        return NamedModel(model_id=model_id, recipe_dir=path.parent, source=shown)

    return read
