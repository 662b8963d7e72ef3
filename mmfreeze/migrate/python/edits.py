"""Text edits at libcst positions, spliced into the original source so every other byte stays put."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange

from mmfreeze.migrate.report import Finding


@dataclass(frozen=True)
class Edit:
    start: tuple[int, int]
    """(1-based line, 0-based column), as libcst's PositionProvider gives them."""
    end: tuple[int, int]
    text: str


@dataclass
class RuleEdits:
    """What one rule decided for one file: edits to make, sites it would not touch, notes."""

    edits: list[Edit] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def edit_for(position: CodeRange, text: str) -> Edit:
    return Edit((position.start.line, position.start.column), (position.end.line, position.end.column), text)


def source_of(lines: list[str], position: CodeRange) -> str:
    """The exact original text of a node."""
    text = "".join(lines)
    return text[_offset(lines, position.start.line, position.start.column):
                _offset(lines, position.end.line, position.end.column)]


def splice(lines: list[str], edits: Iterable[Edit]) -> str:
    """``lines`` (with endings) joined, each edit's range replaced; edits must not overlap."""
    text = "".join(lines)
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        start, end = _offset(lines, *edit.start), _offset(lines, *edit.end)
        text = text[:start] + edit.text + text[end:]
    return text


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(text) for text in lines[: line - 1]) + column


def parses(code: str) -> bool:
    try:
        cst.parse_module(code)
    except cst.ParserSyntaxError:
        return False
    return True
