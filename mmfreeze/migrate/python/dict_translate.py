"""A literal `freeze_config` dict in Python source: read it as data, write a new section in its place.

Reading: the dict's exact source through :func:`ast.literal_eval` (only literals: strings,
booleans, numbers, lists, dicts); anything computed is not a literal and is never guessed.
Writing: a one-line dict stays on one line; a multi-line one keeps one key per line, its
indentation, its quote style and its comments, each moved to the key that replaces the framework
key it stood on (``freeze_modules`` -> ``modules``, ``unfreeze_modules`` -> ``except``, ...); a
comment on a removed key stays above, marked with the key.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from mmfreeze.migrate.section import comment_targets
from mmfreeze.migrate.yaml.text import split_comment

_KEY_LINE = re.compile(r"""^(?P<indent>\s*)(?P<q>['"])(?P<key>\w+)(?P=q)\s*:""")


def literal_section(code: str) -> dict[str, Any] | None:
    """The dict ``code`` spells, when it is a literal with string keys; else ``None``."""
    try:
        value = ast.literal_eval(code.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and all(isinstance(key, str) for key in value) else None


def render_section(section: Mapping[str, Any], code: str) -> str:
    """Source for ``section`` in place of the dict whose source is ``code``."""
    quote = "'" if code.lstrip("{ \n\t").startswith("'") else '"'
    if "\n" in code:
        rendered = _multiline(code, section, quote)
        if rendered is not None:
            return rendered
    return python_literal(section, quote)


def python_literal(value: Any, quote: str = '"') -> str:
    """A Python literal for section data: dicts, lists, strings, booleans, whole numbers."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{python_literal(k, quote)}: {python_literal(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(item, quote) for item in value) + "]"
    if isinstance(value, str):
        return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    return repr(value)


def _multiline(code: str, section: Mapping[str, Any], quote: str) -> str | None:
    lines = code.split("\n")
    if lines[0].strip() != "{" or lines[-1].strip() != "}":
        return None
    above, trailing, indent = _comments(lines[1:-1])
    indent = indent or lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())] + "    "
    placed = comment_targets([*above, *trailing], section)
    orphans = [f"# (was on {key}) {text}" for key, target in placed.items() if key and target is None
               for text in trailing.get(key, [])]
    out = ["{", *(f"{indent}{comment}" for key, target in placed.items() if target is None for comment in above.get(key, []))]
    out += [f"{indent}{comment}" for comment in orphans]
    for key, value in section.items():
        moved = [old for old, target in placed.items() if target == key]
        out += [f"{indent}{comment}" for old in moved for comment in above.get(old, [])]
        notes = [text for old in moved for text in trailing.get(old, [])]
        comment = f"  # {'; '.join(notes)}" if notes else ""
        out.append(f"{indent}{python_literal(key, quote)}: {python_literal(value, quote)},{comment}")
    return "\n".join(out + [lines[-1]])


def _comments(body: list[str]) -> tuple[dict[str | None, list[str]], dict[str, list[str]], str | None]:
    """Full-line comments above each element and comments after it, by the key it starts with
    (``None``: comments after the last element)."""
    above: dict[str | None, list[str]] = {}
    trailing: dict[str, list[str]] = {}
    pending: list[str] = []
    indent, current = None, None
    for line in body:
        if line.strip().startswith("#"):
            pending.append(line.strip())
            continue
        match = _KEY_LINE.match(line)
        if match is not None and match.group("indent") == (indent or match.group("indent")):
            indent, current = match.group("indent"), match.group("key")
            above[current], pending = pending, []
        comment = split_comment(line)[1]
        if comment is not None and current is not None:
            trailing.setdefault(current, []).append(comment)
    above[None] = pending
    return above, trailing, indent
