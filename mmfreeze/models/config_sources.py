"""Find a model's config.json offline: a local directory, the bundled registry, the HF cache.

The network is used only when the caller passes ``allow_network=True`` (``--allow-network`` on the
command line): a snapshot must not depend on what a hub serves today.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from mmfreeze.exceptions import ConfigSourceError

SourceKind = Literal["local", "registry", "hf-cache", "hub"]
REGISTRY_PACKAGE = "mmfreeze.registry"


@dataclass(frozen=True, kw_only=True)
class ModelConfigSource:
    """A model config and where it came from."""

    kind: SourceKind
    location: str
    config: Mapping[str, Any]
    provenance: str | None = None
    """For registry entries: ``checkpoint``, ``partial`` or ``transformers-default``."""


def registry_file_name(model_id: str) -> str:
    """``Qwen/Qwen2.5-VL-7B-Instruct`` -> ``Qwen__Qwen2.5-VL-7B-Instruct.json``."""
    return model_id.replace("/", "__") + ".json"


def find_model_config(
    model_id: str, *, recipe_dir: Path | None = None, allow_network: bool = False, source: str | None = None
) -> ModelConfigSource:
    """The first config found for ``model_id``, in the documented order."""
    found = (
        _from_local_directory(model_id, recipe_dir, source=source)
        or _from_registry(model_id, source=source)
        or _from_hf_cache(model_id, source=source)
    )
    if found is None and allow_network:
        found = _from_hub(model_id, source=source)
    if found is None:
        raise ConfigSourceError(
            f"no config for model id {model_id!r}: not a local directory with config.json, not in the "
            f"bundled registry, not in the local Hugging Face cache. Add it to the registry as "
            f"mmfreeze/registry/configs/{registry_file_name(model_id)} "
            '({"model_id", "provenance", "notes", "config"}), point the recipe at a directory holding '
            "config.json, or pass --allow-network",
            source=source,
            key="model.pretrained_model_name_or_path",
        )
    return found


def _from_local_directory(model_id: str, recipe_dir: Path | None, *, source: str | None) -> ModelConfigSource | None:
    candidates = [Path(model_id).expanduser()]
    if recipe_dir is not None and not Path(model_id).is_absolute():
        candidates.append(recipe_dir / model_id)
    for directory in candidates:
        config_file = directory / "config.json"
        if config_file.is_file():
            return ModelConfigSource(kind="local", location=str(config_file), config=_read_json(config_file, source))
    return None


def _from_registry(model_id: str, *, source: str | None) -> ModelConfigSource | None:
    file_name = _registry_names().get(registry_file_name(model_id).lower())
    if file_name is None:
        return None
    entry = resources.files(REGISTRY_PACKAGE).joinpath("configs", file_name)
    text = _registry_text(file_name)
    if text is None:
        return None
    data = _parse_json(text, f"registry entry {entry.name}", source)
    if not isinstance(data.get("config"), Mapping):
        raise ConfigSourceError(f"registry entry {entry.name} has no `config` mapping", source=source)
    return ModelConfigSource(
        kind="registry",
        location=f"registry:{entry.name}",
        config=data["config"],
        provenance=data.get("provenance"),
    )


@lru_cache(maxsize=1)
def _registry_names() -> dict[str, str]:
    """Lowercased file name -> the bundled file's name: the Hub matches model ids case-insensitively
    (``google/gemma-3n-e4b-it`` is ``google/gemma-3n-E4B-it``), so the registry does too."""
    folder = resources.files(REGISTRY_PACKAGE).joinpath("configs")
    return {entry.name.lower(): entry.name for entry in folder.iterdir() if entry.name.endswith(".json")}


@lru_cache(maxsize=None)
def _registry_text(file_name: str) -> str | None:
    """A bundled registry entry's text (package data: read once per process, however many recipes use it)."""
    entry = resources.files(REGISTRY_PACKAGE).joinpath("configs", file_name)
    return entry.read_text(encoding="utf-8") if entry.is_file() else None


def _from_hf_cache(model_id: str, *, source: str | None) -> ModelConfigSource | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        cached = try_to_load_from_cache(model_id, "config.json")
    except Exception:  # an id that is not a valid repo id cannot be in the cache either
        return None
    if isinstance(cached, str) and Path(cached).is_file():
        return ModelConfigSource(kind="hf-cache", location=cached, config=_read_json(Path(cached), source))
    return None


def _from_hub(model_id: str, *, source: str | None) -> ModelConfigSource | None:
    from huggingface_hub import hf_hub_download

    try:
        downloaded = hf_hub_download(model_id, "config.json")
    except Exception as error:
        raise ConfigSourceError(f"downloading config.json for {model_id!r} failed: {error}", source=source) from error
    return ModelConfigSource(kind="hub", location=downloaded, config=_read_json(Path(downloaded), source))


def _read_json(path: Path, source: str | None) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigSourceError(f"cannot read {path}: {error}", source=source) from error
    return _parse_json(text, str(path), source)


def _parse_json(text: str, what: str, source: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigSourceError(f"{what} is not valid JSON (line {error.lineno}): {error.msg}", source=source) from error
    if not isinstance(data, dict):
        raise ConfigSourceError(f"{what} is not a JSON object", source=source)
    return data
