"""MF001 freeze-config-vocabulary: the `freeze_config` block in the new vocabulary.

Before::

    freeze_config:
      freeze_embeddings: true   # ignored anyway
      # ViT frozen
      freeze_vision_tower: true

After (``--mode preserve`` on a Qwen2.5-VL, whose merger the substring ``visual`` froze)::

    # was on freeze_embeddings: ignored anyway
    freeze_config:
      # ViT frozen
      vision: {tower: true, projector: true}
      language_model: false

Only the block's lines are replaced. Comments on a legacy key move to the key that replaces it;
comments on a removed key go above the block, prefixed with the key they stood on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.rules import MF001
from mmfreeze.migrate.section import KEY_TARGETS, SectionMigration
from mmfreeze.migrate.yaml.context import YamlContext
from mmfreeze.migrate.yaml.text import (
    detect_indent, is_blank_or_comment, key_position, key_span, line_ending, line_key, load_roundtrip, scalar,
    split_lines, trailing_comment,
)

RULE = MF001
SECTION = "freeze_config"


@dataclass
class BlockComments:
    """Comments found in a legacy block, by the legacy key they describe."""

    header: str | None = None
    above: dict[str, list[str]] = field(default_factory=dict)
    trailing: dict[str, str] = field(default_factory=dict)


def rewrite(text: str, context: YamlContext) -> str:
    """``text`` with its legacy `freeze_config` block replaced by ``context.migration``'s section."""
    if context.migration is None:
        return text
    lines = split_lines(text)
    line, column = key_position(load_roundtrip(text, source=context.source), SECTION)
    start, end = key_span(lines, line, column)
    block = lines[start:end]
    _refuse_unsafe(block, source=f"{context.source}:{line + 1}")
    rendered = render_block(context.migration, read_comments(block, source=context.source),
                            indent=detect_indent(lines), eol=line_ending(lines))
    if not block[-1].endswith("\n"):
        rendered[-1] = rendered[-1].rstrip("\r\n")
    return "".join(lines[:start] + rendered + lines[end:])


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
    comments = BlockComments(header=trailing_comment(block[0]))
    pending: list[str] = []
    for line in block[1:]:
        key = line_key(line)
        if line.lstrip().startswith("#"):
            pending.append(line.strip()[1:].strip())
        elif key is not None:
            comments.above[key], pending = pending, []
            found = trailing_comment(line)
            if found is not None:
                comments.trailing[key] = found
        elif "#" in line and not is_blank_or_comment(line):
            raise MigrationError(f"a comment inside a multi-line flow mapping: {line.strip()!r}; migrate it by hand",
                                 source=source, key=SECTION)
    return comments


def render_block(migration: SectionMigration, comments: BlockComments, *, indent: int, eol: str) -> list[str]:
    pad = " " * indent
    moved = {KEY_TARGETS.get(key): key for key in [*comments.above, *comments.trailing]}
    lines = [f"# was on {key}: {text}" for key, text in _orphans(comments, migration.section)]
    lines.append(SECTION + ":" + _trail(comments.header))
    for key, value in migration.section.items():
        legacy = moved.get(key)
        lines.extend(f"{pad}# {text}" for text in comments.above.get(legacy, []))
        trail = _trail(comments.trailing.get(legacy))
        if key == "modules":
            lines.append(f"{pad}modules:{trail}")
            for path in value:
                if path in migration.module_reasons:
                    lines.append(f"{pad * 2}# {migration.module_reasons[path]}")
                lines.append(f"{pad * 2}- {scalar(path)}")
        elif isinstance(value, dict):
            roles = ", ".join(f"{role}: {scalar(flag)}" for role, flag in value.items())
            lines.append(f"{pad}{key}: {{{roles}}}{trail}")
        else:
            lines.append(f"{pad}{key}: {scalar(value)}{trail}")
    return [line + eol for line in lines]


def _orphans(comments: BlockComments, section: dict) -> list[tuple[str, str]]:
    """Comments whose legacy key has no successor in the written section."""
    keys = dict.fromkeys([*comments.above, *comments.trailing])
    orphaned = [key for key in keys if KEY_TARGETS.get(key) not in section]
    return [(key, text) for key in orphaned
            for text in [*comments.above.get(key, []), *filter(None, [comments.trailing.get(key)])]]


def _trail(comment: str | None) -> str:
    return f"  # {comment}" if comment else ""
