"""Values cached by key, in memory for one run and on disk across runs: the base of the
structure and frozen-set caches, which only say how a value becomes JSON and back.

An entry is a gzip file written to a temporary name and renamed into place, so a crash leaves the
old entry or none, never half of one. An entry that cannot be read or decoded is a miss, never an
error: a cache only ever saves work.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from mmfreeze.atomic import replace_file

T = TypeVar("T")

CACHE_ENV = "MMFREEZE_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$MMFREEZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/mmfreeze``, else ``~/.cache/mmfreeze``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mmfreeze"


def cache_directory(cache_dir: Path | str | None, no_cache: bool) -> Path | None:
    """The folder a command's caches use: ``None`` (memory only) under ``--no-cache``."""
    return None if no_cache else Path(cache_dir or default_cache_dir())


DAMAGED = (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError)
"""What reading a damaged entry raises, each a miss: missing or unreadable (OSError, BadGzipFile),
cut short (EOFError), garbled deflate data (zlib.error), not UTF-8 or not JSON (ValueError), JSON too
deeply nested (RecursionError), another shape or format version (what ``decode`` raises)."""
ENTRY_KEY = "entry_key"
"""The field every entry carries its own key in: the file name alone does not bind an entry to it."""
MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""An entry unpacks to far less (the largest of 363 structures of this corpus: 0.8 MB, measured); more
is a damaged or hostile file, read no further."""


class DiskCache(Generic[T]):
    """Values by key under ``directory/<kind>/`` (``directory=None``: memory only).

    A subclass names its ``kind`` and converts values to JSON objects and back; ``decode`` raises
    one of :data:`DAMAGED` (``ValueError`` best) for data it does not accept.
    """

    kind: ClassVar[str]

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._memory: dict[str, T] = {}
        self.write_error: OSError | None = None
        """The first write that failed (read-only or full disk). Later writes are skipped: a
        cache that cannot be written costs time, never a result, and the command says so."""

    def encode(self, value: T) -> Any:
        raise NotImplementedError

    def decode(self, data: Any) -> T:
        raise NotImplementedError

    def has(self, key: str) -> bool:
        """Whether ``key`` has an entry, without reading it (a damaged one is recomputed when read)."""
        return key in self._memory or (self.directory is not None and self._path(key).is_file())

    def is_empty(self) -> bool:
        """No entry in memory or on disk: a first run, where every lookup will miss."""
        if self._memory:
            return False
        folder = None if self.directory is None else self.directory / self.kind
        return folder is None or not folder.is_dir() or next(folder.glob("*.json.gz"), None) is None

    def get(self, key: str) -> T | None:
        """The value stored for ``key``; an entry that is damaged, or that names another key (a file
        copied or renamed into place), is a miss, and is computed again."""
        if key not in self._memory and self.directory is not None:
            try:
                data = json.loads(self._read(self._path(key)))
                if data.pop(ENTRY_KEY) != key:
                    raise KeyError(f"an entry of another key under {key}")
                self._memory[key] = self.decode(data)
            except DAMAGED:
                return None
        return self._memory.get(key)

    @staticmethod
    def _read(path: Path) -> bytes:
        """The entry's JSON text, at most :data:`MAX_ENTRY_BYTES` of it (a larger one is damaged)."""
        with gzip.open(path, "rb") as handle:
            data = handle.read(MAX_ENTRY_BYTES + 1)
        if len(data) > MAX_ENTRY_BYTES:
            raise ValueError(f"{path}: larger than {MAX_ENTRY_BYTES} bytes unpacked")
        return data

    def put(self, key: str, value: T, *, encoded: Any = None) -> None:
        """Store ``value``; ``encoded``: its :meth:`encode` already at hand (a worker's result), not made again."""
        self._memory[key] = value
        if self.directory is None or self.write_error is not None:
            return
        # Level 1: a tenth of level 9's time for a third more bytes (a corpus's structures: 0.02 s
        # against 0.22 s, 0.8 MB against 0.6 MB, measured), written while the workers build.
        data = {**(self.encode(value) if encoded is None else encoded), ENTRY_KEY: key}
        payload = gzip.compress(json.dumps(data, separators=(",", ":")).encode(), compresslevel=1, mtime=0)
        try:
            self._write(self._path(key), payload)
        except OSError as error:
            self.write_error = error

    def write_warning(self) -> str | None:
        """What to tell the user when entries could not be stored."""
        if self.write_error is None:
            return None
        reason = self.write_error.strerror or str(self.write_error)
        return (
            f"cannot write the {self.kind.replace('_', '-')} cache under {self.directory}: {reason}; "
            "this run's results are complete, but the next run computes them again "
            "(choose a writable --cache-dir, or --no-cache)"
        )

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / self.kind / f"{key}.json.gz"

    @staticmethod
    def _write(target: Path, payload: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_file(target, payload)
