"""MF001 freeze-config-vocabulary: the `freeze_config` block in the new vocabulary.

Before::

    freeze_config:
      freeze_embeddings: true   # ignored anyway
      # ViT frozen
      freeze_vision_tower: true

After (``--mode preserve`` on a Qwen2.5-VL, whose merger the substring ``visual`` froze)::

    freeze_config:
      # freeze_embeddings removed: the old freezing code never read it (recipes trained with it ignored)
      # was on freeze_embeddings: ignored anyway
      # ViT frozen
      vision: {tower: true, projector: true}
      language_model: false

Before (nemo-automodel 0.7 selectors on a Qwen2-VL, the last two ViT blocks unfrozen)::

    freeze_config:
      freeze_modules: [{path: model.visual}]
      unfreeze_modules: [{glob: "model.visual.blocks.3[01]"}]

After (``--mode preserve``)::

    freeze_config:
      vision: {tower: true, projector: true}
      language_model: false
      except:
        - {layers: vision.tower, last: 2}

Only the block's lines are replaced. Comments on a framework key move to the key that replaces it
(``freeze_modules`` -> ``modules``, ``unfreeze_modules`` -> ``except``); comments on a removed key,
or on a selector item whose list has no successor, open the section, prefixed with what they stood
on, below the note that says why the key went. Every rewrite a reviewer would question (a key
dropped, a flag written with the other value) says why in a comment above the key it concerns
(:attr:`~mmfreeze.migrate.section.SectionMigration.comments`), as the report does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mmfreeze.exceptions import MigrationError, NoNewVocabularyEquivalent
from mmfreeze.migrate.intent import intent_section
from mmfreeze.migrate.preserve import preserve_section
from mmfreeze.migrate.rules import MF001
from mmfreeze.migrate.section import SectionMigration, check_migratable, comment_targets, entry_key
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.rule import YamlRule
from mmfreeze.migrate.yaml.text import (
    detect_indent, flow, indentation, is_blank_or_comment, key_position, key_span, line_ending, line_key,
    split_comment, trailing_comment,
)
from mmfreeze.recipes.layout import is_compiled_layout

SECTION = "freeze_config"


@dataclass
class BlockComments:
    """Comments found in a legacy block, by the legacy key they describe."""

    header: str | None = None
    above: dict[str, list[str]] = field(default_factory=dict)
    trailing: dict[str, str] = field(default_factory=dict)


class FreezeConfigVocabulary(YamlRule):
    rule = MF001

    def applies(self, planning: Planning, data: Mapping[str, Any]) -> bool:
        """A legacy or 0.7-selector `freeze_config`, outside a compiled layout."""
        return not is_compiled_layout(data) and \
            check_migratable(data.get(SECTION), source=planning.where) in ("legacy", "selectors")

    def plan(self, planning: Planning, data: Mapping[str, Any], plan: SectionPlan) -> SectionPlan:
        """The new section (``--mode``), planned on the model as the section finds it (after MF004)."""
        planner = preserve_section if planning.mode == "preserve" else intent_section
        trained = planning.trained(plan.patterns)
        try:
            migration = planner(trained.structure, data.get(SECTION), trained.inventory, source=planning.where,
                                rules=planning.workspace.framework)
        except NoNewVocabularyEquivalent as error:  # a valid section the new vocabulary cannot say: not a failure
            return replace(plan, kept=str(error))
        return replace(plan, migration=migration, targets=trained)

    def expect(self, data: dict[str, Any], plan: SectionPlan) -> None:
        if plan.migration is not None:
            data[SECTION] = plan.migration.section

    def edit(self, context: YamlContext, edits: LineEdits) -> None:
        """The legacy `freeze_config` block replaced by the planned section."""
        migration = context.plan.migration
        if migration is None:
            return
        lines = list(edits.original)
        line, column = key_position(context.document, SECTION)
        start, end = key_span(lines, line, column)
        block = edits.current(start, end)
        _refuse_unsafe(block, source=f"{context.source}:{line + 1}")
        rendered = render_block(migration, read_comments(block, source=context.source),
                                indent=detect_indent(lines), eol=line_ending(lines))
        if not block[-1].endswith("\n"):
            rendered[-1] = rendered[-1].rstrip("\r\n")
        edits.replace(start, end, rendered)


def _refuse_unsafe(block: list[str], *, source: str) -> None:
    """Anchors, aliases and merge keys tie the block to other places; rewriting it could break them."""
    for offset, line in enumerate(block):
        body = line.split("#", 1)[0]
        if "<<" in body or ": &" in body or ": *" in body or "- *" in body:
            raise MigrationError(
                f"{SECTION} uses an anchor, alias or merge key (line {offset + 1} of the block); "
                "migrate it by hand", source=source, key=SECTION,
            )


def read_comments(block: list[str], *, source: str) -> BlockComments:
    """The block's comments by the key they stand on; a comment on a list item (a 0.7 selector)
    stays with its list's key, quoting the item."""
    comments = BlockComments(header=trailing_comment(block[0]))
    pending: list[str] = []
    child = next((indentation(line) for line in block[1:] if line_key(line) is not None), None)
    current: str | None = None
    for line in block[1:]:
        key = line_key(line) if indentation(line) == child else None
        if line.lstrip().startswith("#"):
            pending.append(line.strip()[1:].strip())
        elif key is not None:
            current, comments.above[key], pending = key, pending, []
            found = trailing_comment(line)
            if found is not None:
                comments.trailing[key] = found
        elif current is not None and line.lstrip().startswith("- "):
            item, found = split_comment(line)
            comments.above[current] = [*comments.above[current], *pending, *([f"{item.strip()[2:]}: {found}"] if found else [])]
            pending = []
        elif "#" in line and not is_blank_or_comment(line):
            raise MigrationError(f"a comment inside a multi-line flow mapping: {line.strip()!r}; migrate it by hand",
                                 source=source, key=SECTION)
    return comments


def render_block(migration: SectionMigration, comments: BlockComments, *, indent: int, eol: str) -> list[str]:
    pad = " " * indent
    placed = comment_targets([*comments.above, *comments.trailing], migration.section)
    lines = [SECTION + ":" + _trail(comments.header)]
    lines.extend(f"{pad}# {text}" for text in migration.comments.get(SECTION, ()))
    # comments whose framework key has no successor in the written section
    lines.extend(f"{pad}# was on {key}: {text}" for key, target in placed.items() if target is None
                 for text in [*comments.above.get(key, []), *filter(None, [comments.trailing.get(key)])])
    for key, value in migration.section.items():
        legacy = [old for old, target in placed.items() if target == key]
        lines.extend(f"{pad}# {text}" for text in migration.comments.get(key, ()))
        lines.extend(f"{pad}# {text}" for old in legacy for text in comments.above.get(old, []))
        trail = _trail("; ".join(comments.trailing[old] for old in legacy if old in comments.trailing))
        if isinstance(value, list):
            lines.append(f"{pad}{key}:{trail}")
            for entry in value:
                if entry_key(entry) in migration.module_reasons:
                    lines.append(f"{pad * 2}# {migration.module_reasons[entry_key(entry)]}")
                lines.append(f"{pad * 2}- {flow(entry)}")
        else:
            lines.append(f"{pad}{key}: {flow(value)}{trail}")
    return [line + eol for line in lines]


def _trail(comment: str | None) -> str:
    return f"  # {comment}" if comment else ""
