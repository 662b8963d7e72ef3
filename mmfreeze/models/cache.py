"""On-disk cache of model structures, keyed by what determines them.

The key is the hash of the config content, the Auto class and the installed transformers and
torch versions, so a warm run reads structures without importing either library, and a changed
config or library version misses exactly the entries it must.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from mmfreeze.disk_cache import DiskCache
from mmfreeze.models.structure import ModelStructure
from mmfreeze.versions import installed_version


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


class StructureCache(DiskCache[ModelStructure]):
    """Model structures by :func:`structure_key`."""

    kind = "structures"

    def encode(self, value: ModelStructure) -> Any:
        return value.to_json()

    def decode(self, data: Any) -> ModelStructure:
        return ModelStructure.from_json(data)
