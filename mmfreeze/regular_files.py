"""Reading a file mmfreeze parses (a recipe, a snapshot): a regular file, and bounded, checked
before a byte is parsed.

A named pipe with a `.yaml` name would block a run forever, and a recipe linked to `/dev/zero`
would be read until memory runs out. The file is opened without blocking (``O_NONBLOCK``: opening a
pipe with no writer returns at once), its kind is read from the open descriptor (no race between
a check and the open), and at most ``limit + 1`` bytes are read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

RECIPE_LIMIT = 4 * 1024**2
"""Bytes: a recipe is a few KiB (the largest bundled one is under 6 KiB)."""
SNAPSHOT_LIMIT = 256 * 1024**2
"""Bytes: a snapshot lists names compressed by range (the largest bundled one is under 30 KiB)."""

_KINDS = {stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}


def read_regular(path: Path, *, limit: int) -> bytes:
    """The bytes of the regular file at ``path`` (links followed); ``OSError`` for anything else
    (its ``strerror`` says what the file is), or for a file over ``limit`` bytes."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind}): only regular files are read", str(path))
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            content = handle.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(content) > limit:
        raise OSError(errno.EFBIG, f"larger than the limit of {limit} bytes", str(path))
    return content
