"""Atomic file replacement: a reader (or a crash) sees the old bytes or the new ones, never a mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from mmfreeze.exceptions import MigrationError


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    The temporary file lives in the same directory so the rename never crosses a file system;
    the original file's permission bits are kept.
    """
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".mmfreeze-tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise MigrationError(f"cannot write: {error}", source=str(path)) from error
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_text_exact(path: Path) -> str:
    """The file's text with its line endings as they are (no universal-newline translation)."""
    return path.read_bytes().decode("utf-8")
