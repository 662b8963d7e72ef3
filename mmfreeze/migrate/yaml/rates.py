"""MF005 rate-selectors: `optimizer.param_group_overrides` regex patterns as `(modality, role)` selectors.

A Qwen2.5-VL trained in full at three rates. Before::

    optimizer:
      param_group_overrides:
        - {pattern: '^model\\.visual\\.merger\\.', lr_mult: 10.0}
        - {pattern: '^model\\.visual\\.', lr_mult: 0.1}

After::

    optimizer:
      param_group_overrides:
        - {role: vision.projector, lr_mult: 10.0}
        - {role: vision.tower, lr_mult: 0.1}

Only each rewritten entry's ``pattern: <value>`` is replaced, in place (a block-style entry gets
one line per selector key), so comments, the multipliers and every other byte stay. Which entries
are rewritten, and the proof, are :mod:`mmfreeze.migrate.rates`'s; a pattern no selector
reproduces is kept and reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mmfreeze.exceptions import MigrationError
from mmfreeze.freeze.recipe_model import rate_targets
from mmfreeze.migrate.rates import has_entries, plan_rate_rewrites, rewritten_entries
from mmfreeze.migrate.rules import MF005
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.rule import YamlRule
from mmfreeze.migrate.yaml.text import line_ending, scalar, split_lines
from mmfreeze.recipes.layout import is_compiled_layout
from mmfreeze.recipes.optimizer import OVERRIDES, SECTION


class RateSelectors(YamlRule):
    rule = MF005

    def applies(self, planning: Planning, data: Mapping[str, Any]) -> bool:
        """Regex `pattern` entries in `param_group_overrides`, outside a compiled layout."""
        return not is_compiled_layout(data) and has_entries(data, pattern=True)

    def plan(self, planning: Planning, data: Mapping[str, Any], plan: SectionPlan) -> SectionPlan:
        """The entries a selector reproduces on the model the optimizer sees (proven), and those kept."""
        recipe = planning.adapted(plan.patterns)
        return replace(plan, rates=plan_rate_rewrites(recipe.document[SECTION][OVERRIDES],
                                                      rate_targets(recipe, planning.built), source=recipe.display_path))

    def expect(self, data: dict[str, Any], plan: SectionPlan) -> None:
        if plan.rates is not None and plan.rates.rewrites:
            data[SECTION] = {**data[SECTION], OVERRIDES: rewritten_entries(data[SECTION][OVERRIDES], plan.rates)}

    def edit(self, context: YamlContext, edits: LineEdits) -> None:
        """Each rewritten entry of the plan's rates naming its selector instead of its pattern."""
        rates = context.plan.rates
        if rates is None or not rates.rewrites:
            return
        lines = list(edits.original)
        entries = context.document[SECTION][OVERRIDES]
        for rewrite in rates.rewrites:
            entry = entries[rewrite.index]
            line, column = entry.lc.key("pattern")
            value_line, value_column = entry.lc.value("pattern")
            [text] = edits.current(line, line + 1)
            end = _scalar_end(text, value_column, flow=entry.fa.flow_style())
            if value_line != line or end is None:
                raise MigrationError("cannot find the end of the pattern's value; rewrite it by hand",
                                     source=f"{context.source}:{line + 1}", key=rewrite.key)
            separator = ", " if entry.fa.flow_style() else line_ending(lines) + " " * column
            written = separator.join(f"{key}: {scalar(value)}" for key, value in rewrite.selector.items())
            edits.replace(line, line + 1, split_lines(text[:column] + written + text[end:]))


def _scalar_end(line: str, start: int, *, flow: bool) -> int | None:
    """The column just after the scalar starting at ``start``: quoted (``''`` and ``\\"`` escapes
    honoured) or plain (up to ``,``/``}`` in a flow mapping, a comment or the line's end)."""
    quote = line[start:start + 1]
    if quote in ("'", '"'):
        index = start + 1
        while index < len(line):
            if quote == "'" and line.startswith("''", index) or quote == '"' and line[index] == "\\":
                index += 2
            elif line[index] == quote:
                return index + 1
            else:
                index += 1
        return None
    stops = [found for found in (line.find(" #", start), *((line.find(",", start), line.find("}", start)) if flow else ()))
             if found != -1]
    return len(line[:min(stops, default=len(line))].rstrip())
