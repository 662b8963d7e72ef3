"""Move a legacy key of a block mapping to a nested path, as text (shared by MF002 and MF003).

The key's lines move as they are (value, children, trailing comments), re-indented for their new
depth; missing parent keys are created at the legacy key's place, or the moved lines are appended
to the deepest parent that already exists. A target that already exists is a conflict: nothing is
guessed, the file is reported.
"""

from __future__ import annotations

from collections.abc import Sequence

from ruamel.yaml.comments import CommentedMap

from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.yaml.text import detect_indent, key_position, key_span, line_ending, load_roundtrip, split_lines


def move_key(text: str, parent_key: str, legacy_key: str, new_path: Sequence[str], *, source: str) -> str:
    """``text`` with ``parent_key.legacy_key`` moved to ``parent_key.<new_path>``; unchanged when absent."""
    document = load_roundtrip(text, source=source)
    parent = document.get(parent_key) if isinstance(document, CommentedMap) else None
    if not isinstance(parent, CommentedMap) or legacy_key not in parent:
        return text
    where = f"{source}:{key_position(parent, legacy_key)[0] + 1}"
    _require_block(parent, f"{parent_key}", where)
    lines = split_lines(text)
    unit = detect_indent(lines)
    existing, node = _deepest_existing(parent, new_path, parent_key, where)
    line, column = key_position(parent, legacy_key)
    start, end = key_span(lines, line, column)
    moved = _moved_lines(lines[start:end], legacy_key, new_path, existing, column, unit, line_ending(lines))
    if not existing:
        return "".join(lines[:start] + moved + lines[end:])
    anchor_map = _mapping_at(parent, new_path[: len(existing) - 1])
    at = key_span(lines, *key_position(anchor_map, existing[-1]))[1]
    if at <= start:
        return "".join(lines[:at] + moved + lines[at:start] + lines[end:])
    return "".join(lines[:start] + lines[end:at] + moved + lines[at:])


def _deepest_existing(parent: CommentedMap, path: Sequence[str], parent_key: str, where: str) -> tuple[list[str], CommentedMap]:
    node, found = parent, []
    for key in path[:-1]:
        child = node.get(key)
        if child is None:
            break
        dotted = ".".join([parent_key, *found, key])
        if not isinstance(child, CommentedMap):
            raise MigrationError(f"{dotted} is not a mapping; cannot nest {path[-1]} under it", source=where, key=dotted)
        _require_block(child, dotted, where)
        node, found = child, [*found, key]
    if len(found) == len(path) - 1 and path[-1] in node:
        dotted = ".".join([parent_key, *path])
        raise MigrationError(f"{dotted} already exists next to the legacy key; keep one by hand",
                             source=where, key=dotted)
    return found, node


def _mapping_at(parent: CommentedMap, path: Sequence[str]) -> CommentedMap:
    node = parent
    for key in path:
        node = node[key]
    return node


def _require_block(mapping: CommentedMap, dotted: str, where: str) -> None:
    if mapping.fa.flow_style():
        raise MigrationError(f"{dotted} is a flow mapping ({{...}}); migrate it by hand", source=where, key=dotted)


def _moved_lines(
    block: list[str], legacy_key: str, path: Sequence[str], existing: Sequence[str], column: int, unit: int, eol: str
) -> list[str]:
    shift = " " * (unit * (len(path) - 1))
    headers = [" " * (column + unit * depth) + f"{key}:{eol}" for depth, key in enumerate(path[:-1]) if depth >= len(existing)]
    first = block[0].replace(legacy_key, path[-1], 1)
    body = [shift + line if line.strip() else line for line in [first, *block[1:]]]
    return headers + body
