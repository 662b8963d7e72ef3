"""Fit a Markdown report into one pull-request comment.

GitHub rejects comments over 65,536 characters, and a real corpus's report can be larger. A
report is a head (title and summary table: every recipe, one row each) and a folded details block
per item. The head is always kept; details follow in order while they fit; a last line says how
many were left out and where the whole report is (``--report-file``).
"""

from __future__ import annotations

from collections.abc import Sequence

COMMENT_LIMIT = 65_536
"""GitHub's maximum comment body, in characters."""


def fit_comment(head: str, details: Sequence[str], *, limit: int = COMMENT_LIMIT) -> str:
    """``head`` plus as many of ``details`` as fit in ``limit`` characters, with a note when any are left out."""
    whole = "\n".join([head, *details])
    if len(whole) <= limit:
        return whole
    kept: list[str] = []
    for index, block in enumerate(details):
        note = _note(len(details) - index)
        if len("\n".join([head, *kept, block, note])) > limit:
            break
        kept.append(block)
    note = _note(len(details) - len(kept))
    text = "\n".join([head, *kept, note])
    if len(text) <= limit:
        return text
    # Even the summary table is too long: keep its first rows (a reviewer reads from the top).
    return head[: limit - len(note) - 40].rsplit("\n", 1)[0] + "\n\n… (summary table cut)\n" + note


def _note(left_out: int) -> str:
    return (f"\n_Details of {left_out} more item{'s' if left_out != 1 else ''} are left out to fit one "
            f"pull-request comment ({COMMENT_LIMIT:,} characters); `--report-file PATH` writes the whole report._\n")
