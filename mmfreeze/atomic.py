"""Atomic file replacement: a reader (or a crash) sees the old bytes or the new ones, never a mix.

One writer for every file mmfreeze replaces: migrated recipes, cache entries, pulled configs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_file(path: Path, content: bytes) -> None:
    """Write ``content`` to a temporary file beside ``path``, flush it to disk, then rename it over
    ``path``. The temporary file lives in the same directory so the rename never crosses a file
    system; an existing file's permission bits are kept; nothing is left behind on failure.
    Raises ``OSError``; the caller says what it was writing."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".mmfreeze-tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
