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
from pathlib import Path
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


STRUCTURE_SHAPE: Mapping[str, type] = {
    "format": int, "class_name": str, "class_module": str, "modules": dict, "module_aliases": dict,
    "root_attributes": dict, "linear_modules": list, "containers": dict, "config_facts": dict, "build_note": str,
    "built_by": str, "parts": list, "composite_frozen": list, "checkpoint_renames": dict, "mixes": list,
    "probes": list, "keep_in_fp32": list, "keep_in_fp32_strict": list, "parameters": list,
}
"""The JSON type of each field :meth:`ModelStructure.to_json` writes: an entry of another shape is
damaged (hand-edited, or written by other code), and a miss."""


class StructureCache(DiskCache[ModelStructure]):
    """Model structures by :func:`structure_key`, and (:attr:`unbuildable`) why a key has none."""

    kind = "structures"

    def __init__(self, directory: Path | None) -> None:
        super().__init__(directory)
        self.unbuildable = UnbuildableCache(directory)

    def encode(self, value: ModelStructure) -> Any:
        return value.to_json()

    def decode(self, data: Any) -> ModelStructure:
        check_structure_shape(data)
        return ModelStructure.from_json(data)


class UnbuildableCache(DiskCache[str]):
    """Why transformers has no class for a key's config under its Auto class
    (:class:`~mmfreeze.exceptions.NoTransformersClass`): a later run says so again without importing
    the library that found it (a Python call site bound to a model id tries the Auto classes in turn)."""

    kind = "unbuildable"

    def encode(self, value: str) -> Any:
        return {"reason": value}

    def decode(self, data: Any) -> str:
        if not isinstance(data, dict) or not isinstance(data.get("reason"), str):
            raise ValueError("not an unbuildable entry")
        return data["reason"]


def check_structure_shape(data: Any) -> None:
    """``ValueError`` unless ``data`` has the fields and JSON types a stored structure has, its
    parameters each ``[name, [sizes], requires_grad, [aliases]]``: a value of the wrong type would
    otherwise be read, and fail (or mislead) far from the cache."""
    if not isinstance(data, dict) or set(data) != set(STRUCTURE_SHAPE):
        raise ValueError("not a stored structure: its fields differ")
    wrong = [name for name, kind in STRUCTURE_SHAPE.items() if not isinstance(data[name], kind)]
    if wrong:
        raise ValueError(f"a stored structure's {', '.join(wrong)} of the wrong type")
    for row in data["parameters"]:
        if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str) and isinstance(row[2], bool)
                and isinstance(row[1], list) and all(type(size) is int and size >= 0 for size in row[1])
                and isinstance(row[3], list) and all(isinstance(alias, str) for alias in row[3])):
            raise ValueError(f"a stored structure's parameter is not [name, [sizes], requires_grad, [aliases]]: {row!r:.80}")
