"""What a recipe tells the model layer and the engine: its model request, its model id for
`configs pull`, and, given its built structure, its frozen set and its trained model.

``models`` takes plain values and never reads recipes (imports only go down); this is the glue,
in the lowest layer that may import both ``recipes`` and ``models`` without being the pure
resolver. Every caller that loads a recipe's model, or computes what it trains, goes through it:
`snapshot`, `explain` and `migrate` compute the same set the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mmfreeze.models.framework import BuilderChoice, BuildSpec, choose_builder, spec_for_recipe
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
    from mmfreeze.recipes.layout import CompiledSections


def recipe_frozen_set(
    recipe: Recipe, structure: ModelStructure, *, target: CompileTarget | None = None, recorded: Renames | None = None,
) -> FrozenSetResult:
    """What ``recipe`` trains on its built ``structure``: its `peft`, `freeze_config` and
    `multimodal` overrides through the engine (the snapshot's set). Its optimizer's
    `param_group_overrides` must each take some trainable tensor (:func:`check_overrides`), and
    their selectors are resolved on the trained model, with the recipe's overrides. A recipe with
    compiled sections must hold what its source compiles to on ``target`` (this run's release,
    transformers and builder): :func:`mmfreeze.freeze.compiler.check.check_compiled`; and, in every
    environment, the compiled sections applied as the framework applies them must train what the
    source does on ``structure`` (:func:`mmfreeze.freeze.compiler.check.check_compiled_trains`), so the
    returned set is also the compiled section's. ``recorded``: the checkpoint renames of the builder
    ``compiled_for`` names, as its snapshot recorded them, for sections compiled on a tree this
    environment does not build (:func:`_compiled_frozen_set`)."""
    result, grouping = _frozen_set(recipe, structure)
    if recipe.compiled is not None and target is not None:
        from mmfreeze.freeze.compiler.check import check_compiled, check_compiled_trains

        elsewhere = recipe.compiled.compiled_for != target.describe()
        trained = _compiled_frozen_set(recipe, structure, recorded if elsewhere else None)
        if trained is not None:  # in every environment: what the stock framework trains
            check_compiled_trains(trained, result, target=target, source=recipe.display_path)
        expected = _compiled(recipe, structure, result, grouping, target)
        check_compiled(recipe.compiled, expected, target=target, source=recipe.display_path)
    return result


def compiled_sections(recipe: Recipe, structure: ModelStructure, *, target: CompileTarget) -> CompiledSections:
    """What ``recipe``'s source compiles to for ``target``'s release, proven on ``structure``
    (built by ``target``'s builder), as `migrate` writes it."""
    result, grouping = _frozen_set(recipe, structure)
    return _compiled(recipe, structure, result, grouping, target)


def compiled_hold(recipe: Recipe, structure: ModelStructure) -> bool:
    """Whether ``recipe``'s compiled sections, read as the framework reads the file, train exactly
    what its source does on ``structure`` (frozen set and rates): compiled on another model tree
    of the same release (the framework's classes), they may still hold on this one."""
    from mmfreeze.exceptions import MmfreezeError

    if recipe.compiled is None:
        return False
    try:
        source, _ = _frozen_set(recipe, structure)
    except MmfreezeError:
        return False
    compiled = _compiled_frozen_set(recipe, structure, None)
    return compiled is not None and (compiled.frozen, compiled.rates) == (source.frozen, source.rates)


def _compiled_frozen_set(recipe: Recipe, structure: ModelStructure, recorded: Renames | None) -> FrozenSetResult | None:
    """What ``recipe``'s compiled sections train on ``structure``, read and applied as the framework
    reads the file, in ``structure``'s names. A selector may name another tree than this one:

    - another transformers release's (5.18's ``thinker.visual`` is 5.24's ``thinker.model.visual``):
      the selectors and LoRA patterns are first moved through this release's conversion mapping,
      as `migrate` moves them (:mod:`mmfreeze.freeze.release_renames`);
    - the framework's own class (``visual`` of its Qwen2.5-Omni thinker), which this environment
      does not build: the sections are applied on this class under that builder's names, through
      the checkpoint (``recorded``: its renames as its snapshot recorded them), and the set is
      named back.

    ``None`` where neither reaches: no snapshot made where ``compiled_for`` points records that
    builder's names (a repository that commits only another environment's snapshots), and only
    that environment compares the sections."""
    from mmfreeze.exceptions import MmfreezeError
    from mmfreeze.freeze.engine import trained_structure
    from mmfreeze.freeze.release_renames import apply_moves, moved_patterns, moved_selectors

    document = recipe.framework_document
    as_read = replace(recipe, document=document, compiled=None)
    try:
        return _frozen_set(as_read, structure)[0]
    except MmfreezeError:
        pass
    try:
        patterns = moved_patterns(document.get("peft"), structure, recipe.framework)
        adapted = apply_moves(document, patterns)
        trained = trained_structure(structure, adapted, source=recipe.display_path, rules=recipe.framework)
        if moves := (*patterns, *moved_selectors(adapted.get("freeze_config"), trained)):
            return _frozen_set(replace(as_read, document=apply_moves(document, moves)), structure)[0]
    except MmfreezeError:
        pass
    if recorded is None:
        return None
    on_other_tree, _ = _frozen_set(as_read, structure.in_names_of(recorded))
    return _named(on_other_tree, lambda name: structure.checkpoint_renames.to_model(recorded.to_checkpoint(name)))


def _named(result: FrozenSetResult, name: Callable[[str], str]) -> FrozenSetResult:
    """``result`` with ``name`` applied to every parameter it names."""
    from mmfreeze.freeze.plan import FreezePlan

    return replace(
        result, structure=result.structure.renamed(name),
        plan=FreezePlan({name(parameter): rules for parameter, rules in result.plan.rules_by_parameter.items()}),
        adapters=None if result.adapters is None else frozenset(map(name, result.adapters)),
        rates={rate: frozenset(map(name, names)) for rate, names in result.rates.items()},
    )


def _frozen_set(
    recipe: Recipe, structure: ModelStructure,
) -> tuple[FrozenSetResult, tuple[OptimizerSection, ParamGroups] | None]:
    """The engine's result with its rates, and the optimizer's selector entries with their groups
    (``None`` without selector entries: nothing for the compiler)."""
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


def _compiled(
    recipe: Recipe, structure: ModelStructure, result: FrozenSetResult,
    grouping: tuple[OptimizerSection, ParamGroups] | None, target: CompileTarget,
) -> CompiledSections:
    from mmfreeze.freeze.compiler.sections import compile_sections

    optimizer, groups = grouping if grouping is not None else (None, None)
    return compile_sections(result, structure, recipe.document, target=target, source=recipe.display_path,
                            optimizer=optimizer, groups=groups)


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
    from mmfreeze.freeze.engine import trained_structure

    found = next((structure.part(part) for part in structure.parts if part.freeze_config), structure)
    return _targets(recipe, trained_structure(found, recipe.document, source=recipe.display_path, rules=recipe.framework))


def model_request(recipe: Recipe, builder: BuilderChoice | None = None) -> ModelRequest:
    """The model ``recipe`` trains, where its config may be found, and how ``builder`` builds it
    (default: the transformers builder, :func:`~mmfreeze.models.framework.choose_builder`)."""
    builder = builder or choose_builder("transformers")
    return ModelRequest(
        model_id=recipe.model.model_id,
        auto_class=recipe.model.auto_class,
        recipe_dir=recipe.path.parent,
        configs_dir=recipe.configs_dir,
        local_models=recipe.local_models,
        source=recipe.display_path,
        build=build_spec(builder, recipe),
        drafter=recipe.model.drafter,
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
