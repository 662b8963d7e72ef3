"""On-disk cache of model structures, keyed by what determines them.

The key is the hash of the config content, the Auto class and the installed transformers and
torch versions, so a warm run reads structures without importing either library, and a changed
config or library version misses exactly the entries it must.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmfreeze.models.structure import ModelStructure
from mmfreeze.versions import installed_version

CACHE_ENV = "MMFREEZE_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$MMFREEZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/mmfreeze``, else ``~/.cache/mmfreeze``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mmfreeze"


def structure_key(config: Mapping[str, Any], auto_class: str) -> str:
    """A stable hash of everything that decides the built model's structure."""
    material = {
        "config": config,
        "auto_class": auto_class,
        "transformers": installed_version("transformers"),
        "torch": installed_version("torch"),
    }
    encoded = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


class StructureCache:
    """Structures by key: in memory for this run, on disk across runs (``directory=None``: memory only)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._memory: dict[str, ModelStructure] = {}

    def get(self, key: str) -> ModelStructure | None:
        if key in self._memory:
            return self._memory[key]
        structure = self._read(key)
        if structure is not None:
            self._memory[key] = structure
        return structure

    def put(self, key: str, structure: ModelStructure) -> None:
        self._memory[key] = structure
        if self.directory is not None:
            self._write(self._path(self.directory, key), structure)

    def _path(self, directory: Path, key: str) -> Path:
        return directory / "structures" / f"{key}.json.gz"

    def _read(self, key: str) -> ModelStructure | None:
        if self.directory is None or not self._path(self.directory, key).is_file():
            return None
        try:
            with gzip.open(self._path(self.directory, key), "rt", encoding="utf-8") as handle:
                return ModelStructure.from_json(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged or older entry is rebuilt, never trusted

    def _write(self, target: Path, structure: ModelStructure) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        payload = gzip.compress(json.dumps(structure.to_json(), separators=(",", ":")).encode(), mtime=0)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".gz")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(payload)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
