"""Move a legacy key of a block mapping to a nested path, as text: MF002 and MF003 (:class:`LegacyKeyMove`).

The key's lines move as they are (value, children, trailing comments), re-indented for their new
depth; missing parent keys are created at the legacy key's place, or the moved lines are appended
to the deepest parent that already exists. A target that already exists is a conflict: nothing is
guessed, the file is reported. A parent an earlier move created (MF002's `multimodal`, for MF003)
counts as existing: :attr:`LineEdits.created` says where its block ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ruamel.yaml.comments import CommentedMap

from mmfreeze.distributed.legacy_keys import NESTED_PATHS
from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.rule import YamlRule
from mmfreeze.migrate.yaml.text import detect_indent, key_position, key_span, line_ending

PARENT = "distributed"


class LegacyKeyMove(YamlRule):
    """A legacy `distributed` key moved to its nested path (:data:`NESTED_PATHS`), value as written."""

    legacy: ClassVar[str]

    def applies(self, planning: Planning, data: Mapping[str, Any]) -> bool:
        return isinstance(parent := data.get(PARENT), Mapping) and self.legacy in parent

    def expect(self, data: dict[str, Any], plan: SectionPlan) -> None:
        path, node = NESTED_PATHS[self.legacy], data[PARENT]
        value = node.pop(self.legacy)
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    def edit(self, context: YamlContext, edits: LineEdits) -> None:
        """``distributed.<legacy>`` moved to ``distributed.<nested path>``; nothing when absent."""
        document, legacy_key, new_path = context.document, self.legacy, NESTED_PATHS[self.legacy]
        parent = document.get(PARENT) if isinstance(document, CommentedMap) else None
        if not isinstance(parent, CommentedMap) or legacy_key not in parent:
            return
        line, column = key_position(parent, legacy_key)
        where = f"{context.source}:{line + 1}"
        _require_block(parent, PARENT, where)
        lines = list(edits.original)
        unit = detect_indent(lines)
        existing = _deepest_existing(parent, new_path, where, edits.created)
        start, end = key_span(lines, line, column)
        moved = _moved_lines(edits.current(start, end), legacy_key, new_path, existing, column, unit,
                             line_ending(lines))
        if not existing:
            edits.replace(start, end, moved)
            at = end
        else:
            made = edits.created.get((PARENT, *existing))
            at = made if made is not None else \
                key_span(lines, *key_position(_mapping_at(parent, new_path[: len(existing) - 1]), existing[-1]))[1]
            edits.replace(start, end, [])
            edits.insert(at, moved)
        for depth in range(len(existing), len(new_path) - 1):
            edits.created[(PARENT, *new_path[: depth + 1])] = at


def _deepest_existing(
    parent: CommentedMap, path: Sequence[str], where: str, created: dict[tuple[str, ...], int],
) -> list[str]:
    node: CommentedMap | None = parent
    found: list[str] = []
    for key in path[:-1]:
        child = node.get(key) if node is not None else None
        if child is None and (PARENT, *found, key) not in created:
            break
        dotted = ".".join([PARENT, *found, key])
        if child is not None and not isinstance(child, CommentedMap):
            raise MigrationError(f"{dotted} is not a mapping; cannot nest {path[-1]} under it", source=where, key=dotted)
        if child is not None:
            _require_block(child, dotted, where)
        node, found = child, [*found, key]
    if len(found) == len(path) - 1 and (node is not None and path[-1] in node):
        dotted = ".".join([PARENT, *path])
        raise MigrationError(f"{dotted} already exists next to the legacy key; keep one by hand",
                             source=where, key=dotted)
    return found


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
