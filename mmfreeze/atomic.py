"""Atomic file replacement: a reader (or a crash) sees the old bytes or the new ones, never a mix.

One writer for every file mmfreeze replaces: migrated recipes, cache entries, pulled configs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

_TEMPORARY_SUFFIX = ".mmfreeze-tmp"


def replace_file(path: Path, content: bytes) -> None:
    """Write ``content`` beside ``path``, flush it to disk, then rename it over ``path``.

    The content is written into an unnamed file (Linux ``O_TMPFILE``) that only gets a name once it
    is complete, so a writer killed while writing (SIGKILL runs no cleanup) leaves nothing behind.
    The name it then gets lives in the same directory (the rename never crosses a file system) and
    carries the writer's pid: the next write of ``path`` removes such names whose writer is dead,
    which covers a kill in the instant between naming and renaming. An existing file's permission
    bits are kept; a new file gets what ``open(2)`` would give it, 0666 less the umask. Raises
    ``OSError``; the caller says what it was writing."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else new_file_mode()
    _remove_orphans(path)
    temporary = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{_TEMPORARY_SUFFIX}"
    try:
        _write_named(temporary, content, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def new_file_mode() -> int:
    """0666 less this process's umask (the temporary file is made 0600 until it is complete)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)  # no /proc: read it by setting it, back at once
    os.umask(mask)
    return 0o666 & ~mask


def _write_named(temporary: Path, content: bytes, mode: int) -> None:
    unnamed = _open_unnamed(temporary.parent)
    descriptor = unnamed if unnamed is not None else os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with open(descriptor, "wb", closefd=False) as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.fchmod(descriptor, mode)
        if unnamed is not None:
            _name(descriptor, temporary)
    finally:
        os.close(descriptor)


def _name(descriptor: int, temporary: Path) -> None:
    # os.link calls link(2), which would link /proc's symlink itself; a directory descriptor makes it
    # call linkat(2) with AT_SYMLINK_FOLLOW, which links the open file (open(2), O_TMPFILE).
    folder = os.open(temporary.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(f"/proc/self/fd/{descriptor}", temporary.name, dst_dir_fd=folder)
    finally:
        os.close(folder)


def _open_unnamed(folder: Path) -> int | None:
    """An unnamed file in ``folder``, or None where the platform or file system has no O_TMPFILE."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY, 0o600)
    except OSError:  # e.g. EOPNOTSUPP on file systems without O_TMPFILE
        return None


def _remove_orphans(path: Path) -> None:
    """Remove temporary names of ``path`` left by writers that no longer run."""
    for leftover in path.parent.glob(f".{path.name}.*.*{_TEMPORARY_SUFFIX}"):
        pid = leftover.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _is_running(int(pid)):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
