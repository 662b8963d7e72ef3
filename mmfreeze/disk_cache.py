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
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")

CACHE_ENV = "MMFREEZE_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$MMFREEZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/mmfreeze``, else ``~/.cache/mmfreeze``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mmfreeze"


class DiskCache(Generic[T]):
    """Values by key under ``directory/<kind>/`` (``directory=None``: memory only).

    A subclass names its ``kind`` and converts values to JSON-shaped data and back; ``decode``
    raises ``ValueError``, ``KeyError`` or ``TypeError`` for data it does not accept.
    """

    kind: ClassVar[str]

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._memory: dict[str, T] = {}

    def encode(self, value: T) -> Any:
        raise NotImplementedError

    def decode(self, data: Any) -> T:
        raise NotImplementedError

    def has(self, key: str) -> bool:
        """Whether ``key`` has an entry, without reading it (a damaged one is recomputed when read)."""
        return key in self._memory or (self.directory is not None and self._path(key).is_file())

    def get(self, key: str) -> T | None:
        if key not in self._memory and self.directory is not None:
            try:
                with gzip.open(self._path(key), "rt", encoding="utf-8") as handle:
                    self._memory[key] = self.decode(json.load(handle))
            except (OSError, ValueError, KeyError, TypeError):  # missing, truncated, another format
                return None
        return self._memory.get(key)

    def put(self, key: str, value: T) -> None:
        self._memory[key] = value
        if self.directory is not None:
            self._write(self._path(key), gzip.compress(json.dumps(self.encode(value), separators=(",", ":")).encode(), mtime=0))

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / self.kind / f"{key}.json.gz"

    @staticmethod
    def _write(target: Path, payload: bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".gz")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(payload)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
