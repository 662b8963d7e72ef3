"""The compiler's entry points for one recipe: its source compiled for a target (what `migrate`
writes), and its compiled sections held to that source (what `snapshot --check` runs), each on the
structure the run built for it.

The source's own frozen set and rates come from :func:`mmfreeze.freeze.recipe_model.source_frozen_set`;
the compiled sections are read and applied as the framework reads the file
(:attr:`mmfreeze.recipes.recipe.Recipe.framework_document`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.freeze.compiler.check import check_compiled, check_compiled_trains, unreachable_here
from mmfreeze.freeze.compiler.sections import compile_sections
from mmfreeze.freeze.compiler.target import CompileTarget
from mmfreeze.freeze.engine import FrozenSetResult, trained_structure
from mmfreeze.freeze.plan import FreezePlan
from mmfreeze.freeze.recipe_model import RateGrouping, source_frozen_set
from mmfreeze.freeze.release_renames import apply_moves, moved_patterns, moved_selectors
from mmfreeze.recipes.recipe import Recipe

if TYPE_CHECKING:
    from mmfreeze.models.renames import Renames
    from mmfreeze.models.structure import ModelStructure
    from mmfreeze.recipes.layout import CompiledSections


def hold_compiled(
    recipe: Recipe, structure: ModelStructure, result: FrozenSetResult, grouping: RateGrouping | None, *,
    target: CompileTarget, recorded: Renames | None,
) -> None:
    """``recipe``'s compiled sections held to its source (``result``, ``grouping``: the source's
    outcome on ``structure``): they must be what the source compiles to on ``target`` (this run's
    release, transformers and builder): :func:`~mmfreeze.freeze.compiler.check.check_compiled`; and,
    in every environment, applied as the framework applies them, they must train what the source
    does on ``structure`` (:func:`~mmfreeze.freeze.compiler.check.check_compiled_trains`), so the
    source's set is also the compiled section's. ``recorded``: the checkpoint renames of the builder
    ``compiled_for`` names, for sections compiled on a tree this environment does not build
    (:func:`compiled_frozen_set`)."""
    elsewhere = recipe.compiled.compiled_for != target.describe()
    trained = compiled_frozen_set(recipe, structure, recorded if elsewhere else None)
    if trained is not None:  # in every environment: what the stock framework trains
        check_compiled_trains(trained, result, target=target, source=recipe.display_path)
    elif elsewhere:  # never skipped: what cannot be compared here is said, with where it can be
        unreachable_here(recipe.compiled, target=target, source=recipe.display_path)
    # compiled here, a section that does not apply here is not what the source compiles to: said below
    expected = compile_sections(result, structure, recipe.document, target=target, source=recipe.display_path,
                                grouping=grouping)
    check_compiled(recipe.compiled, expected, target=target, source=recipe.display_path)


def compiled_sections(recipe: Recipe, structure: ModelStructure, *, target: CompileTarget) -> CompiledSections:
    """What ``recipe``'s source compiles to for ``target``'s release, proven on ``structure``
    (built by ``target``'s builder), as `migrate` writes it."""
    result, grouping = source_frozen_set(recipe, structure)
    return compile_sections(result, structure, recipe.document, target=target, source=recipe.display_path,
                            grouping=grouping)


def compiled_hold(recipe: Recipe, structure: ModelStructure) -> bool:
    """Whether ``recipe``'s compiled sections, read as the framework reads the file, train exactly
    what its source does on ``structure`` (frozen set and rates): compiled on another model tree
    of the same release (the framework's classes), they may still hold on this one."""
    if recipe.compiled is None:
        return False
    try:
        source, _ = source_frozen_set(recipe, structure)
    except MmfreezeError:
        return False
    compiled = compiled_frozen_set(recipe, structure, None)
    return compiled is not None and (compiled.frozen, compiled.rates) == (source.frozen, source.rates)


def compiled_frozen_set(recipe: Recipe, structure: ModelStructure, recorded: Renames | None) -> FrozenSetResult | None:
    """What ``recipe``'s compiled sections train on ``structure``, read and applied as the framework
    reads the file, in ``structure``'s names. A selector may name another tree than this one:

    - another transformers release's (5.18's ``thinker.visual`` is 5.24's ``thinker.model.visual``):
      the selectors and LoRA patterns are first moved through this release's conversion mapping,
      as `migrate` moves them (:mod:`mmfreeze.freeze.release_renames`);
    - the framework's own class (``visual`` of its Qwen2.5-Omni thinker), which this environment
      does not build: the sections are applied on this class under that builder's names, through
      the checkpoint (``recorded``: its renames, :meth:`mmfreeze.workspace.Workspace.recorded`),
      and the set is named back.

    ``None`` where none of these reaches: neither the snapshot made where ``compiled_for`` points
    nor mmfreeze's record of the framework's classes gives that builder's names, and only that
    environment can compare the sections
    (:func:`~mmfreeze.freeze.compiler.check.unreachable_here` says so)."""
    document = recipe.framework_document
    as_read = replace(recipe, document=document, compiled=None)
    try:
        return source_frozen_set(as_read, structure)[0]
    except MmfreezeError:
        pass
    try:
        patterns = moved_patterns(document.get("peft"), structure, recipe.framework)
        adapted = apply_moves(document, patterns)
        trained = trained_structure(structure, adapted, source=recipe.display_path, rules=recipe.framework)
        if moves := (*patterns, *moved_selectors(adapted.get("freeze_config"), trained)):
            return source_frozen_set(replace(as_read, document=apply_moves(document, moves)), structure)[0]
    except MmfreezeError:
        pass
    if recorded is None:
        return None
    on_other_tree, _ = source_frozen_set(as_read, structure.in_names_of(recorded))
    return _named(on_other_tree, lambda name: structure.checkpoint_renames.to_model(recorded.to_checkpoint(name)))


def _named(result: FrozenSetResult, name: Callable[[str], str]) -> FrozenSetResult:
    """``result`` with ``name`` applied to every parameter it names."""
    return replace(
        result, structure=result.structure.renamed(name),
        plan=FreezePlan({name(parameter): rules for parameter, rules in result.plan.rules_by_parameter.items()}),
        adapters=None if result.adapters is None else frozenset(map(name, result.adapters)),
        rates={rate: frozenset(map(name, names)) for rate, names in result.rates.items()},
    )

