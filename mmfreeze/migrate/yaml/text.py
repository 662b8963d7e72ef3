"""Line-level helpers for splicing YAML text: where a key's block starts and ends, its indentation.

Splicing (rather than dumping a round-tripped document) is the one write path: bytes outside the
edited block cannot change, whatever ruamel would have re-rendered differently (quotes, ``~``,
flow style, spacing), and the caller re-parses the result to prove it.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml.comments import CommentedMap

from mmfreeze.exceptions import MigrationError
from mmfreeze.recipes.recipe import parse_yaml_text

DEFAULT_INDENT = 2
_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][\w.-]*)\s*:(?:\s|$)")
_PLAIN_SCALAR = re.compile(r"^[A-Za-z_][\w.\-/]*$")


def load_roundtrip(text: str, *, source: str) -> Any:
    """The document with line/column information; a syntax error names file:line."""
    return parse_yaml_text(text, source=source, typ="rt", error_type=MigrationError)


def indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def is_blank_or_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def key_span(lines: list[str], start: int, column: int) -> tuple[int, int]:
    """Lines ``[start, end)`` of the key at ``start``: its line and every more-indented line after it.
    Trailing blank and comment lines are left out: they belong to what follows."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or indentation(lines[end]) > column):
        end += 1
    while end - 1 > start and is_blank_or_comment(lines[end - 1]):
        end -= 1
    return start, end


def key_position(mapping: CommentedMap, key: str) -> tuple[int, int]:
    """0-based (line, column) of ``key`` in ``mapping``."""
    return mapping.lc.key(key)


def detect_indent(lines: list[str]) -> int:
    """The file's indentation step: the first indented key line under a top-level key, else 2."""
    for line in lines:
        if _KEY.match(line) and 0 < indentation(line) <= 8 and not line.lstrip().startswith("- "):
            return indentation(line)
    return DEFAULT_INDENT


def trailing_comment(line: str) -> str | None:
    """The ``# ...`` text at the end of a line, outside quoted scalars."""
    return split_comment(line)[1]


def split_comment(line: str) -> tuple[str, str | None]:
    """A line's content (trailing space removed) and its ``#`` comment text, found outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and line[index - 1] in " \t":
            return line[:index].rstrip(), line[index + 1:].strip()
    return line.rstrip("\r\n"), None


def line_key(line: str) -> str | None:
    match = _KEY.match(line)
    return match.group("key") if match else None


def scalar(value: Any) -> str:
    """A YAML scalar for the values migration writes: booleans, numbers, module paths, globs and patterns."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    return text if _PLAIN_SCALAR.match(text) else "'" + text.replace("'", "''") + "'"


def flow(value: Any) -> str:
    """A scalar, or a one-line flow mapping of scalars (``{tower: true}``, ``{layers: vision.tower, last: 4}``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {scalar(item)}" for key, item in value.items()) + "}"
    return scalar(value)


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, so joining them gives the text back byte for byte."""
    return text.splitlines(keepends=True)


def line_ending(lines: list[str]) -> str:
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
