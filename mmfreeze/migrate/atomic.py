"""Atomic file replacement: a reader (or a crash) sees the old bytes or the new ones, never a mix."""

from __future__ import annotations

from pathlib import Path

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import MigrationError


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (:func:`mmfreeze.atomic.replace_file`)."""
    try:
        replace_file(path, text.encode("utf-8"))
    except OSError as error:
        raise MigrationError(f"cannot write: {error}", source=str(path)) from error


def read_text_exact(path: Path) -> str:
    """The file's text with its line endings as they are (no universal-newline translation)."""
    return path.read_bytes().decode("utf-8")
