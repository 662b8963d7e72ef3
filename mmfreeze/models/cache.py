"""On-disk cache of model structures, keyed by what determines them.

The key is the hash of the config content, the Auto class, the builder (transformers, or the
framework's release and options: :class:`~mmfreeze.models.framework.BuildSpec`), the installed
transformers and torch versions and the model layer's own code (it reads the structure, and derives
the checkpoint renames, from the live model), so a warm run reads structures without importing
either library, and a changed config, builder, library version or reader misses exactly the
entries it must.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from mmfreeze.disk_cache import DiskCache
from mmfreeze.models.framework import TRANSFORMERS_SPEC, BuildSpec
from mmfreeze.models.structure import ModelStructure
from mmfreeze.versions import PACKAGE_DIR, code_fingerprint, installed_version


BUILD_PACKAGES = ("transformers", "torch", "torchvision", "timm")
"""The installed packages whose versions shape a built module tree (timm and torchvision build
some vision towers); nemo-automodel's version is part of a framework build's identity."""


def structure_key(config: Mapping[str, Any], auto_class: str, build: BuildSpec = TRANSFORMERS_SPEC, *,
                  probed: bool = False) -> str:
    """A stable hash of everything that decides the built model's structure (``probed``: and its probes)."""
    material = {
        "config": config,
        "auto_class": auto_class,
        "build": build.identity(),
        "probed": probed,
        **{package: installed_version(package) for package in BUILD_PACKAGES},
        "model_code": code_fingerprint(PACKAGE_DIR / "models"),
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
