"""MF004 release-renames: `freeze_config` selectors and `peft` patterns moved onto the installed release's module paths.

A recipe written for transformers 5.18, migrated under 5.24 (which nests the thinker's towers
under ``model``). Before::

    freeze_config:
      freeze_modules:
        - {path: thinker.visual}
        - {path: thinker.audio_tower}

After::

    freeze_config:
      freeze_modules:
        - {path: thinker.model.visual}
        - {path: thinker.model.audio_tower}

``peft.target_modules`` / ``exclude_modules`` patterns move the same way (``thinker.visual.*`` ->
``thinker.model.visual.*``). Only the values change, in place, so comments and layout stay; which
values move, and the proof that the recipe means what it meant, are
:mod:`mmfreeze.freeze.release_renames`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mmfreeze.exceptions import MigrationError
from mmfreeze.freeze.release_renames import (
    PATTERN_LISTS, SELECTOR_LISTS, SelectorMove, apply_moves, moved_patterns, moved_selectors, prove_moves,
)
from mmfreeze.migrate.rules import MF004
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.rule import YamlRule
from mmfreeze.recipes.layout import is_compiled_layout
from mmfreeze.resolver.overrides import override_specs

QUOTES = "'\""


class ReleaseRenames(YamlRule):
    rule = MF004

    def applies(self, planning: Planning, data: Mapping[str, Any]) -> bool:
        """A `freeze_config` with selector lists, or `peft` with pattern lists, outside a compiled
        layout (its source is under `mmfreeze:`, and only MF006 touches it)."""
        return not is_compiled_layout(data) and any(
            isinstance(block := data.get(name), Mapping) and any(key in block for key in keys)
            for name, keys in (("freeze_config", SELECTOR_LISTS), ("peft", PATTERN_LISTS)))

    def plan(self, planning: Planning, data: Mapping[str, Any], plan: SectionPlan) -> SectionPlan:
        """The patterns that match no module of the built model but do through its renames, then the
        selectors, on the model with adapters where the moved patterns place them; proven."""
        recipe, built = planning.recipe, planning.built
        patterns = moved_patterns(data.get("peft"), built, recipe.framework)
        moves = (*patterns, *moved_selectors(data.get("freeze_config"), planning.trained(patterns).structure))
        if moves:
            prove_moves(data, apply_moves(data, moves), built, source=planning.where,
                        override_specs=override_specs(recipe.module_overrides), rules=recipe.framework)
        return replace(plan, moves=moves)

    def expect(self, data: dict[str, Any], plan: SectionPlan) -> None:
        data.update(apply_moves(data, plan.moves))

    def edit(self, context: YamlContext, edits: LineEdits) -> None:
        """Each of the plan's moves written over its old value, right to left on its line."""
        spots: dict[int, list[tuple[int, SelectorMove]]] = {}
        for move in context.plan.moves:
            line, column = _position(context.document, move)
            spots.setdefault(line, []).append((column, move))
        for line, moves in sorted(spots.items()):
            [text] = edits.current(line, line + 1)
            for column, move in sorted(moves, key=lambda spot: spot[0], reverse=True):  # earlier columns stay valid
                found = text[column:]
                quote = found[0] if found[:1] in QUOTES else ""
                written = f"{quote}{move.old}{quote}"
                if not found.startswith(written):
                    raise MigrationError(f"cannot find {move.old!r} where YAML puts {move.key}; move it by hand",
                                         source=f"{context.source}:{line + 1}", key=move.key)
                text = text[:column] + f"{quote}{move.new}{quote}" + found[len(written):]
            edits.replace(line, line + 1, [text])


def _position(document: Any, move: SelectorMove) -> tuple[int, int]:
    entries = document[move.section][move.list_key]
    if move.plain:
        return entries.lc.item(move.index)
    return entries[move.index].lc.value(move.kind)
