"""Lossless range compression of parameter names for snapshot files.

Repeated layers differ only in one index, so they are written once with the indices as ranges:

Before::

    model.layers.0.mlp.up_proj.weight
    model.layers.1.mlp.up_proj.weight
    model.layers.2.mlp.up_proj.weight
    model.layers.5.mlp.up_proj.weight

After::

    model.layers.{0..2,5}.mlp.up_proj.weight

Only the first numeric dotted component of a name is ranged, and only when it is written as
``str(int(text))`` (no sign, no leading zero), so expanding gives back exactly the input. A name
that itself contains ``{``, ``}`` or ``\\`` is written after a ``\\`` escape and never ranged.
A layer-count change then shows in ``git diff`` as one changed line per parameter kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

ESCAPE = "\\"
_RANGED = re.compile(r"^(?P<head>.*?)\{(?P<ranges>\d+(?:\.\.\d+)?(?:,\d+(?:\.\.\d+)?)*)\}(?P<tail>.*)$")
_SPECIAL = frozenset("{}\\")


def _split_first_index(name: str) -> tuple[str, int, str] | None:
    """``a.3.b`` -> ``("a.", 3, ".b")``: the first component that is a canonical integer."""
    parts = name.split(".")
    for position, part in enumerate(parts):
        if part.isascii() and part.isdigit() and str(int(part)) == part:
            head = ".".join(parts[:position]) + ("." if position else "")
            tail = ("." if position < len(parts) - 1 else "") + ".".join(parts[position + 1 :])
            return head, int(part), tail
    return None


def _format_ranges(indices: list[int]) -> str:
    runs: list[list[int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ",".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


def compress_names(names: Iterable[str]) -> list[str]:
    """Sorted lines that :func:`expand_lines` turns back into exactly ``set(names)``."""
    lines: list[str] = []
    templates: dict[tuple[str, str], list[int]] = {}
    for name in set(names):
        if _SPECIAL & set(name):
            lines.append(ESCAPE + name)
        elif (split := _split_first_index(name)) is None:
            lines.append(name)
        else:
            head, index, tail = split
            templates.setdefault((head, tail), []).append(index)
    for (head, tail), indices in templates.items():
        if len(indices) == 1:
            lines.append(f"{head}{indices[0]}{tail}")
        else:
            lines.append(f"{head}{{{_format_ranges(indices)}}}{tail}")
    return sorted(lines)


def _expand_ranges(text: str) -> Iterator[int]:
    for run in text.split(","):
        first, _, last = run.partition("..")
        yield from range(int(first), int(last or first) + 1)


def expand_line(line: str) -> Iterator[str]:
    """The names one compressed line stands for."""
    if line.startswith(ESCAPE):
        yield line[len(ESCAPE) :]
        return
    match = _RANGED.match(line)
    if match is None:
        yield line
        return
    for index in _expand_ranges(match["ranges"]):
        yield f"{match['head']}{index}{match['tail']}"


def expand_lines(lines: Iterable[str]) -> set[str]:
    return {name for line in lines for name in expand_line(line)}
