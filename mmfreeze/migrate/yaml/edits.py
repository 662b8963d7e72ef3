"""Line edits on a file's original text, planned by every rule and applied once.

Every YAML rule finds its places in the one round-trip parse of the original text (line and
column numbers of that text), and states its change as a replacement of original lines
``[start, end)``. A rule that rewrites a block an earlier rule already edited (MF006 moves the
section MF001 wrote) reads the block as the earlier edits leave it (:meth:`LineEdits.current`) and
replaces it whole: its edit absorbs theirs. Edits that cross each other are refused. The text is
put together once, at the end (:meth:`LineEdits.text`), and the caller verifies it once.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmfreeze.exceptions import MigrationError


@dataclass(frozen=True)
class LineEdit:
    start: int
    end: int
    """Original lines ``[start, end)`` replaced; ``start == end`` inserts before line ``start``."""
    lines: tuple[str, ...]
    order: int
    """Insertions at one place come out in the order they were made."""

    def inside(self, start: int, end: int) -> bool:
        """Whether this edit lies within ``[start, end)`` (an insertion: strictly inside)."""
        if self.start == self.end:
            return start < self.start < end
        return start <= self.start and self.end <= end


class LineEdits:
    """The original lines (endings kept) and the edits planned on them."""

    def __init__(self, lines: list[str], *, source: str) -> None:
        self.original = tuple(lines)
        self.source = source
        self._edits: list[LineEdit] = []
        self._made = 0
        self.created: dict[tuple[str, ...], int] = {}
        """Mappings an edit created (key path from the top), and the original line their block
        ends before: a later rule that nests under one appends there (MF003 under MF002's)."""

    def current(self, start: int, end: int) -> list[str]:
        """Original lines ``[start, end)`` as the edits inside them leave them."""
        return _joined(self.original, [edit for edit in self._edits if edit.inside(start, end)], start, end)

    def replace(self, start: int, end: int, lines: list[str]) -> None:
        """Replace original lines ``[start, end)``; edits inside the range are absorbed (``lines``
        was made from :meth:`current`), an edit that crosses its border is refused."""
        for edit in self._edits:
            if edit.inside(start, end) or edit.start == edit.end or edit.end <= start or edit.start >= end:
                continue
            raise MigrationError(f"two rewrites overlap at lines {start + 1}-{end} and {edit.start + 1}-{edit.end}; "
                                 "nothing written (please report this file)", source=self.source)
        kept = [edit for edit in self._edits if not (edit.inside(start, end) and start != end)]
        self._made += 1
        self._edits = [*kept, LineEdit(start, end, tuple(lines), self._made)]

    def insert(self, at: int, lines: list[str]) -> None:
        """Insert ``lines`` before original line ``at`` (after any insertion made there before)."""
        self.replace(at, at, lines)

    def text(self) -> str:
        return "".join(_joined(self.original, self._edits, 0, len(self.original)))


def _joined(original: tuple[str, ...], edits: list[LineEdit], start: int, end: int) -> list[str]:
    """Original lines ``[start, end)`` with ``edits`` (none crossing another) applied."""
    inserts: dict[int, list[LineEdit]] = {}
    replaced: dict[int, LineEdit] = {}
    for edit in sorted(edits, key=lambda found: found.order):
        if edit.start == edit.end:
            inserts.setdefault(edit.start, []).append(edit)
        else:
            replaced[edit.start] = edit
    out: list[str] = []
    index = start
    while index < end:
        out.extend(line for edit in inserts.get(index, ()) for line in edit.lines)
        edit = replaced.get(index)
        if edit is not None:
            out.extend(edit.lines)
            index = edit.end
        else:
            out.append(original[index])
            index += 1
    out.extend(line for edit in inserts.get(end, ()) for line in edit.lines if end == len(original))
    return out
