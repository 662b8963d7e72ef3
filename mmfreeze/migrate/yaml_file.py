"""One YAML file: plan the section (needs the model), run the YAML rules on its one parse, prove the result.

The file is parsed once (round-trip, by the run's :class:`~mmfreeze.recipes.documents.YamlDocuments`),
and the rewritten text once more, to prove it: the rewritten text parses, and its data equals the old data with exactly the intended
edits applied (new `freeze_config`, moved distributed keys). Anything else raises, so a file is
either rewritten correctly or reported and left alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml.comments import CommentedMap

from mmfreeze.distributed.legacy_keys import LEGACY_FRAME_SHARDING, LEGACY_FROZEN_SHARDING, NESTED_PATHS
from mmfreeze.distributed.native import native_support
from mmfreeze.exceptions import MigrationError, MmfreezeError, NoNewVocabularyEquivalent, NotNativelyExpressible
from mmfreeze.freeze.compiler.target import compile_target, release_of
from mmfreeze.freeze.keys import detect_vocabulary
from mmfreeze.freeze.recipe_model import (
    compiled_hold, compiled_sections, rate_targets, recipe_frozen_set, recipe_trained_model,
)
from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.migrate.compare import group_parameters
from mmfreeze.migrate.intent import intent_section
from mmfreeze.migrate.preserve import preserve_section
from mmfreeze.migrate.report import FileResult
from mmfreeze.freeze.release_renames import (
    PATTERN_LISTS, SELECTOR_LISTS, SelectorMove, apply_moves, moved_patterns, moved_selectors, prove_moves,
)
from mmfreeze.migrate.rates import RatePlan, pattern_entries, plan_rate_rewrites, rewritten_entries
from mmfreeze.migrate.rules import MF001, MF002, MF003, MF004, MF005, MF006
from mmfreeze.migrate.section import Mode, SectionMigration, check_migratable
from mmfreeze.migrate.yaml.context import YamlContext
from mmfreeze.migrate.yaml.native_compile import notes_current
from mmfreeze.migrate.yaml.registry import apply_yaml_rules
from mmfreeze.migrate.yaml.text import key_position
from mmfreeze.models.framework import FALLBACK_PREFIX, built_label
from mmfreeze.recipes.layout import COMPILED_FOR, SOURCE_FREEZE, CompiledSections, is_compiled_layout, read_layout
from mmfreeze.recipes.layout import SECTION as SOURCE_SECTION
from mmfreeze.recipes.optimizer import OVERRIDES
from mmfreeze.recipes.optimizer import SECTION as OPTIMIZER
from mmfreeze.recipes.recipe import parse_yaml_text
from mmfreeze.recipes.roundtrip import YamlFile
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.workspace import Workspace

if TYPE_CHECKING:
    from mmfreeze.memory.change import ChangeCost

NOT_PROVEN_ON_THE_TRAINED_CLASS = (
    "not proven on the class that trains: the framework's own class could not be built on meta here, and the "
    "transformers class stood in (builder_fallback); prove it where the framework builds its class")
_MOVES = {MF002.id: LEGACY_FROZEN_SHARDING, MF003.id: LEGACY_FRAME_SHARDING}


def migrate_yaml(
    path: Path, file: YamlFile, *, display: str, mode: Mode, disabled: Collection[str], workspace: Workspace,
) -> FileResult:
    """The migrated text of one YAML file (``file``: its one parse, held by the run's workspace)
    and what it changes; errors become a skipped result. The rewritten text is parsed once, to verify it."""
    text, document = file.text, file.data
    try:
        if not isinstance(document, Mapping):
            return FileResult(display=display, old_text=text, new_text=text, status="unchanged")
        where = _section_line(file.tree, display=display)
        plan = _plan(path, document, mode, disabled, workspace, where)
        plan = _compile(path, document, plan, disabled, workspace, where)
        context = YamlContext(source=display, document=file.tree, migration=plan.migration, moves=plan.moves,
                              rates=plan.rates, compiled=plan.compiled)
        new_text, rules = apply_yaml_rules(text, context, disabled)
        written = _verify(document, new_text, plan, rules, source=display) if rules else document
    except MmfreezeError as error:
        return FileResult(display=display, old_text=text, new_text=text, status="skipped", error=str(error))
    result = _result(display, file, new_text, rules, document, plan)
    if not result.changed:
        return result
    cost = _cost(path, written, result, workspace, source=display) if result.status == "changed" else None
    return replace(result, nemo_automodel=native_support(written).verdict, cost=cost)


def _cost(
    path: Path, written: Mapping[str, Any], result: FileResult, workspace: Workspace, *,
    source: str,
) -> ChangeCost:
    """What the rewrite's change of the trainable set costs per rank: the migrated recipe on the
    model its builder builds, against the same set with every moved group moved back."""
    from mmfreeze.memory.change import moved_cost

    layout = read_layout(written, source=source)
    migrated = replace(workspace.recipe(path), document=layout.document, compiled=layout.compiled)
    request = workspace.request(migrated, probed=False)
    after = recipe_frozen_set(migrated, workspace.structure(request))
    config = workspace.config(request).config
    return moved_cost(migrated, after, result.newly_frozen, result.newly_trainable,
                      world_setting=workspace.settings.world_size,
                      config=config)


@dataclass(frozen=True)
class SectionPlan:
    """What the rules that need the model write: MF004's selector moves, then MF001's new section
    (and the trained model MF001 planned on), and MF005's rate selectors."""

    moves: tuple[SelectorMove, ...] = ()
    migration: SectionMigration | None = None
    targets: FreezeTargets | None = None
    rates: RatePlan | None = None
    kept: str | None = None
    """Why a valid `freeze_config` stays in the framework's vocabulary (MF001 writes nothing)."""
    compiled: CompiledSections | None = None
    """MF006's compiled sections, when the file does not hold them yet."""
    not_compiled: str | None = None
    """Why MF006 compiles nothing: the release cannot state the source (it keeps the integration)."""

    def source_document(self, original: Mapping[str, Any]) -> dict[str, Any]:
        """The recipe as the rules before MF006 leave it: the source in `freeze_config` and the optimizer."""
        expected = apply_moves(original, self.moves)
        if self.migration is not None:
            expected["freeze_config"] = self.migration.section
        if self.rates is not None and self.rates.rewrites:
            optimizer = expected[OPTIMIZER] = dict(expected[OPTIMIZER])
            optimizer[OVERRIDES] = rewritten_entries(optimizer[OVERRIDES], self.rates)
        return expected

    def document(self, original: Mapping[str, Any]) -> dict[str, Any]:
        """The data the rewritten file must hold (the rest of the file's changes are other rules')."""
        expected = self.source_document(original)
        if self.compiled is None:
            return expected
        settings = dict(expected.get(SOURCE_SECTION) or {})
        if SOURCE_FREEZE not in settings:
            settings[SOURCE_FREEZE] = expected["freeze_config"]
            if self.compiled.param_group_overrides is not None:
                settings[OVERRIDES] = expected[OPTIMIZER][OVERRIDES]
        settings[COMPILED_FOR] = self.compiled.compiled_for
        expected[SOURCE_SECTION] = settings
        expected["freeze_config"] = self.compiled.freeze_config
        if self.compiled.param_group_overrides is not None:
            expected[OPTIMIZER] = {**expected[OPTIMIZER], OVERRIDES: self.compiled.param_group_overrides}
        return expected


def _plan(
    path: Path, document: Mapping[str, Any], mode: Mode, disabled: Collection[str], workspace: Workspace, where: str,
) -> SectionPlan:
    """MF004's moves for selectors and LoRA patterns written for another transformers release
    (proven), MF001's new section for a legacy, 0.7-selector or mixed `freeze_config` (planned
    on the moved recipe), and MF005's selectors for regex rate patterns (proven on it)."""
    if is_compiled_layout(document):  # the source is already under `mmfreeze:`: only MF006 applies
        return SectionPlan()
    section = document.get("freeze_config")
    vocabulary_change = MF001.id not in disabled and check_migratable(section, source=where) in ("legacy", "selectors")
    may_move = MF004.id not in disabled and any(
        isinstance(block := document.get(name), Mapping) and any(key in block for key in keys)
        for name, keys in (("freeze_config", SELECTOR_LISTS), ("peft", PATTERN_LISTS)))
    may_rate = MF005.id not in disabled and bool(pattern_entries(document))
    if not (vocabulary_change or may_move or may_rate):
        return SectionPlan()
    recipe = workspace.recipe(path)
    built = workspace.structure(workspace.request(recipe, probed=False))
    moves = moved_patterns(document.get("peft"), built, recipe.framework) if may_move else ()
    if moves:  # the adapters decide which modules the section finds
        recipe = replace(recipe, document=apply_moves(document, moves))
    trained = recipe_trained_model(recipe, built)
    moves += moved_selectors(section, trained.structure) if may_move else ()
    if moves:
        moved = apply_moves(document, moves)
        prove_moves(document, moved, built, source=where, override_specs=override_specs(recipe.module_overrides),
                    rules=recipe.framework)
        section = moved.get("freeze_config")
    rates = plan_rate_rewrites(recipe.document[OPTIMIZER][OVERRIDES], rate_targets(recipe, built),
                               source=recipe.display_path) if may_rate else None
    if not vocabulary_change:
        return SectionPlan(moves=moves, rates=rates)
    planner = preserve_section if mode == "preserve" else intent_section
    try:
        migration = planner(trained.structure, section, trained.inventory, source=where, rules=workspace.framework)
    except NoNewVocabularyEquivalent as error:  # a valid section the new vocabulary cannot say: not a failure
        return SectionPlan(moves=moves, rates=rates, kept=str(error))
    return SectionPlan(moves, migration, trained, rates)


def _compile(
    path: Path, document: Mapping[str, Any], plan: SectionPlan, disabled: Collection[str], workspace: Workspace,
    where: str,
) -> SectionPlan:
    """MF006: the source the other rules leave, compiled for the repository's release on the model
    its builder builds and proven there; nothing when the file already holds exactly that."""
    source = plan.source_document(document)
    section = document[SOURCE_SECTION][SOURCE_FREEZE] if is_compiled_layout(document) else source.get("freeze_config")
    vocabulary = detect_vocabulary(section, source=where)
    # A 0.7-selector section the new vocabulary cannot say (``plan.kept``) is its own source; it
    # is compiled only for the rate selectors beside it, which 0.7 cannot read.
    if MF006.id in disabled or not (vocabulary == "new" or (vocabulary == "selectors" and _selector_rates(source))):
        return plan
    recipe = workspace.recipe(path)
    held = recipe.compiled
    recipe = replace(recipe, document={**recipe.document, **{key: source[key] for key in ("freeze_config", OPTIMIZER)
                                                             if key in source and held is None}})
    built = workspace.structure(workspace.request(recipe, probed=False))
    # the builder that really built it: a fallback to the transformers class is stamped as such
    target = compile_target(workspace.framework, built_label(workspace.builder.label, build_note=built.build_note,
                                                          built_by=built.built_by))
    try:
        compiled = compiled_sections(recipe, built, target=target)
    except NotNativelyExpressible as error:
        return replace(plan, not_compiled=f"{where}: not compiled, it runs through mmfreeze's integration: {error.message}")
    same_release = held is not None and release_of(held.compiled_for) == release_of(compiled.compiled_for)
    if held is not None and (held == compiled or (same_release and compiled_hold(recipe, built))):
        # what it holds (for this release, maybe on the framework's classes) trains the same here;
        # its notes alone may be out of date, and then it is written again as it is
        return plan if notes_current(workspace.documents.file(path), held) else replace(plan, compiled=held)
    return replace(plan, compiled=compiled)


def _selector_rates(document: Mapping[str, Any]) -> bool:
    optimizer = document.get(OPTIMIZER)
    entries = optimizer.get(OVERRIDES) if isinstance(optimizer, Mapping) else None
    return isinstance(entries, list) and any(isinstance(entry, Mapping) and "pattern" not in entry for entry in entries)


def _section_line(tree: Any, *, display: str) -> str:
    """``file:line`` of the `freeze_config` key, for messages about the section."""
    if isinstance(tree, CommentedMap) and "freeze_config" in tree:
        return f"{display}:{key_position(tree, 'freeze_config')[0] + 1}"
    return display


def _verify(
    document: Mapping[str, Any], new_text: str, plan: SectionPlan, rules: list[str], *, source: str,
) -> Mapping[str, Any]:
    """The rewritten text's data, which must be the old data with exactly the planned edits."""
    expected = plan.document(document)
    for rule in rules:
        if rule in _MOVES:
            legacy = _MOVES[rule]
            path = NESTED_PATHS[legacy]
            value = expected["distributed"].pop(legacy)
            node = expected["distributed"]
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
    written = parse_yaml_text(new_text, source=source, error_type=MigrationError)
    if written != expected:
        raise MigrationError("the rewritten text does not parse to the intended data; nothing written "
                             "(please report this file)", source=source)
    return written


def _result(
    display: str, file: YamlFile, new_text: str, rules: list[str], document: Mapping[str, Any], plan: SectionPlan,
) -> FileResult:
    text = file.text
    moved = (*(move.describe() for move in plan.moves if MF004.id in rules), *_rate_notes(display, file.tree, plan.rates),
             *((plan.kept,) if plan.kept else ()), *((plan.not_compiled,) if plan.not_compiled else ()),
             *((f"compiled for {plan.compiled.compiled_for}",) if MF006.id in rules and plan.compiled else ()),
             *((NOT_PROVEN_ON_THE_TRAINED_CLASS,) if MF006.id in rules and plan.compiled
               and FALLBACK_PREFIX in plan.compiled.compiled_for else ()))
    migration, targets = plan.migration, plan.targets
    if migration is None or targets is None:
        status = "kept" if plan.kept else "already-migrated" if document.get("freeze_config") is not None \
            else "no-freeze-config"
        rewritten = MF004.id in rules or MF005.id in rules or MF006.id in rules
        if rules == [MF006.id] and is_compiled_layout(document):
            status = "recompiled"
        elif rewritten:
            status = "preserved"
        return FileResult(display=display, old_text=text, new_text=new_text, status=status, rules=tuple(rules),
                          notes=moved)
    section = migration
    if section.module_reasons:
        status = "needs-escape-hatch"
    else:
        status = "preserved" if section.preserved else "changed"
    return FileResult(
        display=display, old_text=text, new_text=new_text, status=status, rules=tuple(rules),
        notes=(*moved, *section.notes),
        newly_frozen=group_parameters(section.newly_frozen, targets),
        newly_trainable=group_parameters(section.newly_trainable, targets),
    )


def _rate_notes(display: str, tree: Any, rates: RatePlan | None) -> tuple[str, ...]:
    """What MF005 rewrote, and each pattern it kept with why, at ``file:line`` of its entry."""
    if rates is None:
        return ()
    entries = tree[OPTIMIZER][OVERRIDES]
    return (*(rewrite.describe() for rewrite in rates.rewrites),
            *(f"{display}:{entries.lc.item(kept.index)[0] + 1}: {kept.describe()}" for kept in rates.kept))
