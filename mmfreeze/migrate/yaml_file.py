"""One YAML file: its rules plan on its one parse (those that need the model, on the run's), edit
its lines once, and the result is proven.

The file is parsed once (round-trip, by the run's :class:`~mmfreeze.recipes.documents.YamlDocuments`),
and the rewritten text once more, to prove it: the rewritten text parses, and its data equals what
the rules that applied said it must hold (:mod:`mmfreeze.migrate.yaml.rule`). Anything else raises,
so a file is either rewritten correctly or reported and left alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml.comments import CommentedMap

from mmfreeze.distributed.native import native_support
from mmfreeze.exceptions import MigrationError, MmfreezeError
from mmfreeze.freeze.recipe_model import recipe_frozen_set
from mmfreeze.migrate.compare import group_parameters
from mmfreeze.migrate.rates import RatePlan
from mmfreeze.migrate.report import FileResult
from mmfreeze.migrate.rules import MF004, MF005, MF006
from mmfreeze.migrate.section import Mode
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.registry import apply_yaml_rules, plan_yaml_rules
from mmfreeze.migrate.yaml.text import key_position
from mmfreeze.models.framework import FALLBACK_PREFIX
from mmfreeze.recipes.layout import is_compiled_layout, read_layout
from mmfreeze.recipes.optimizer import OVERRIDES
from mmfreeze.recipes.optimizer import SECTION as OPTIMIZER
from mmfreeze.recipes.recipe import parse_yaml_text
from mmfreeze.recipes.roundtrip import YamlFile
from mmfreeze.workspace import Workspace

if TYPE_CHECKING:
    from mmfreeze.memory.change import ChangeCost

NOT_PROVEN_ON_THE_TRAINED_CLASS = (
    "not proven on the class that trains: the framework's own class could not be built on meta here, and the "
    "transformers class stood in (builder_fallback); prove it where the framework builds its class")


def migrate_yaml(
    path: Path, file: YamlFile, *, display: str, mode: Mode, disabled: Collection[str], workspace: Workspace,
) -> FileResult:
    """The migrated text of one YAML file (``file``: its one parse, held by the run's workspace)
    and what it changes; errors become a skipped result. The rewritten text is parsed once, to verify it."""
    text, document = file.text, file.data
    try:
        if not isinstance(document, Mapping):
            return FileResult(display=display, old_text=text, new_text=text, status="unchanged")
        planning = Planning(path=path, document=document, where=_section_line(file.tree, display=display), mode=mode,
                            workspace=workspace)
        applying, plan, expected = plan_yaml_rules(planning, disabled)
        new_text, rules = apply_yaml_rules(text, YamlContext(source=display, document=file.tree, plan=plan), applying)
        written = _verify(expected, new_text, source=display) if rules else document
    except MmfreezeError as error:
        return FileResult(display=display, old_text=text, new_text=text, status="skipped", error=str(error))
    result = _result(display, file, new_text, rules, plan)
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
    loaded = workspace.loaded(request)
    after = recipe_frozen_set(migrated, loaded.structure)
    return moved_cost(migrated, after, result.newly_frozen, result.newly_trainable,
                      world_setting=workspace.settings.world_size, loaded=loaded)


def _section_line(tree: Any, *, display: str) -> str:
    """``file:line`` of the `freeze_config` key, for messages about the section."""
    if isinstance(tree, CommentedMap) and "freeze_config" in tree:
        return f"{display}:{key_position(tree, 'freeze_config')[0] + 1}"
    return display


def _verify(expected: Mapping[str, Any], new_text: str, *, source: str) -> Mapping[str, Any]:
    """The rewritten text's data, which must be the old data with exactly the planned edits."""
    written = parse_yaml_text(new_text, source=source, error_type=MigrationError)
    if written != expected:
        raise MigrationError("the rewritten text does not parse to the intended data; nothing written "
                             "(please report this file)", source=source)
    return written


def _result(display: str, file: YamlFile, new_text: str, rules: list[str], plan: SectionPlan) -> FileResult:
    text, document = file.text, file.data
    moved = (*(move.describe() for move in plan.moves if MF004.id in rules), *_rate_notes(display, file.tree, plan.rates),
             *((plan.kept,) if plan.kept else ()), *((plan.not_compiled,) if plan.not_compiled else ()),
             *((f"compiled for {plan.compiled.compiled_for}",) if MF006.id in rules and plan.compiled else ()),
             *((NOT_PROVEN_ON_THE_TRAINED_CLASS,) if MF006.id in rules and plan.compiled
               and FALLBACK_PREFIX in plan.compiled.compiled_for else ()))
    migration, targets = plan.migration, plan.targets
    if migration is None or targets is None:
        status = "kept" if plan.kept else "already-migrated" if document.get("freeze_config") is not None \
            else "no-freeze-config"
        if rules == [MF006.id] and is_compiled_layout(document):
            status = "recompiled"
        elif MF004.id in rules or MF005.id in rules or MF006.id in rules:
            status = "preserved"
        return FileResult(display=display, old_text=text, new_text=new_text, status=status, rules=tuple(rules),
                          notes=moved)
    if migration.module_reasons:
        status = "needs-escape-hatch"
    else:
        status = "preserved" if migration.preserved else "changed"
    return FileResult(
        display=display, old_text=text, new_text=new_text, status=status, rules=tuple(rules),
        notes=(*moved, *migration.notes),
        newly_frozen=group_parameters(migration.newly_frozen, targets),
        newly_trainable=group_parameters(migration.newly_trainable, targets),
    )


def _rate_notes(display: str, tree: Any, rates: RatePlan | None) -> tuple[str, ...]:
    """What MF005 rewrote, and each pattern it kept with why, at ``file:line`` of its entry."""
    if rates is None:
        return ()
    entries = tree[OPTIMIZER][OVERRIDES]
    return (*(rewrite.describe() for rewrite in rates.rewrites),
            *(f"{display}:{entries.lc.item(kept.index)[0] + 1}: {kept.describe()}" for kept in rates.kept))
