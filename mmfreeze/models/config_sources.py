"""Find a model's config.json offline: a local directory, the repository's configs folder, the
bundled registry, the HF cache.

The network is used only when the caller passes ``allow_network=True`` (``--allow-network`` on the
command line): a snapshot must not depend on what a hub serves today. ``mmfreeze configs pull``
is the way to bring configs in from the network once, into the configs folder, with their revision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mmfreeze.exceptions import ConfigSourceError, MissingModelConfigError
from mmfreeze.models.config_folder import CONFIG_FILE, find_folder_config, read_pull_record
from mmfreeze.settings import LocalModels

if TYPE_CHECKING:
    from mmfreeze.models.hub import FetchedConfig

SourceKind = Literal["local", "configs", "registry", "hf-cache", "hub"]
REGISTRY_PACKAGE = "mmfreeze.registry"


@dataclass(frozen=True, kw_only=True)
class ModelConfigSource:
    """A model config and where it came from."""

    kind: SourceKind
    location: str
    config: Mapping[str, Any]
    provenance: str | None = None
    """For registry entries: ``checkpoint``, ``partial``, ``transformers-default`` or ``framework-default``; for the configs
    folder: where `mmfreeze configs pull` took the file from (``hub`` or ``hf-cache``), when it is unchanged since."""
    revision: str | None = None
    """The Hub commit the config was downloaded at, when known (configs-folder entries that
    `mmfreeze configs pull` wrote, the hub cache's and the hub's own)."""
    local_label: str | None = None
    """A local directory's name as a snapshot stores it (:meth:`LocalModels.label`); ``None`` for
    a model id, and for a directory read with no repository to name it from."""


def registry_file_name(model_id: str) -> str:
    """``Qwen/Qwen2.5-VL-7B-Instruct`` -> ``Qwen__Qwen2.5-VL-7B-Instruct.json``."""
    return model_id.replace("/", "__") + ".json"


def find_model_config(
    model_id: str, *, recipe_dir: Path | None = None, configs_dir: Path | None = None,
    local_models: LocalModels | None = None, allow_network: bool = False, source: str | None = None,
) -> ModelConfigSource:
    """The first config found for ``model_id``, in the documented order: a local directory (where
    ``local_models`` allows one), the repository's configs folder (``configs_dir``), the bundled
    registry, the local HF cache, and the hub only with ``allow_network``."""
    found = find_offline_config(model_id, recipe_dir=recipe_dir, configs_dir=configs_dir, local_models=local_models,
                                source=source)
    if found is None:
        from mmfreeze.models.hub import cached_main_config  # huggingface_hub: only when the carried sources have none

        found = _from_hub_bytes(cached_main_config(model_id), kind="hf-cache", source=source)
    if found is None and allow_network:
        found = _from_hub(model_id, source=source)
    if found is None:
        raise MissingModelConfigError(
            missing_config_message(model_id, configs_dir), model_id=model_id, source=source,
            key="model.pretrained_model_name_or_path",
        )
    return found


def find_offline_config(
    model_id: str, *, recipe_dir: Path | None = None, configs_dir: Path | None = None,
    local_models: LocalModels | None = None, source: str | None = None,
) -> ModelConfigSource | None:
    """The sources a repository carries with it: a local directory, the configs folder, the bundled
    registry (not the machine's HF cache, which CI does not have). ``local_models``: where a local
    directory may be (``None``: anywhere, for library use with no repository)."""
    return (
        _from_local_directory(model_id, recipe_dir, local_models, source=source)
        or (_from_configs_folder(model_id, configs_dir, source=source) if configs_dir is not None else None)
        or _from_registry(model_id, source=source)
    )


def missing_config_message(model_id: str, configs_dir: Path | None) -> str:
    """Why ``model_id`` has no config, and the ways to give it one."""
    if configs_dir is None:
        return (
            f"no config for model id {model_id!r}: not a local directory with config.json, not in the bundled "
            "registry or the local Hugging Face cache. Set `configs = \"model_configs\"` under [tool.mmfreeze] in "
            "pyproject.toml and run `mmfreeze configs pull RECIPES` (network), point the recipe at a directory "
            "holding config.json, or pass --allow-network"
        )
    target = _shown(configs_dir / model_id / CONFIG_FILE)
    return (
        f"no config for model id {model_id!r}: not a local directory with config.json, not in the configs folder, "
        f"the bundled registry or the local Hugging Face cache. Run `mmfreeze configs pull RECIPES` (network) or "
        f"add {target}, or pass --allow-network"
    )


def missing_configs_summary(
    missing: Mapping[str, Sequence[str]], *, configs_dir: Path | None, paths: Sequence[str] = (), shown: int = 8
) -> str:
    """One line for every model id without a config (id -> the recipes naming it), with the way out.

    ``33 model ids have no config: a/b (2 recipes), c/d, … and 25 more — run `mmfreeze configs pull
    recipes` or add them under model_configs/<org>/<name>/config.json``
    """
    ids = sorted(missing, key=str.lower)
    listed = [f"{model_id} ({len(missing[model_id])} recipes)" if len(missing[model_id]) > 1 else model_id
              for model_id in ids[:shown]]
    more = f", … and {len(ids) - shown} more" if len(ids) > shown else ""
    noun = "model id has" if len(ids) == 1 else "model ids have"
    pull = f"`mmfreeze configs pull {' '.join(paths) or 'RECIPES'}`"
    remedy = (
        f"run {pull} or add them under {_shown(configs_dir)}/<org>/<name>/config.json" if configs_dir is not None
        else f"set `configs = \"model_configs\"` under [tool.mmfreeze] in pyproject.toml, then run {pull}"
    )
    return f"{len(ids)} {noun} no config: {', '.join(listed)}{more} — {remedy}"


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _from_local_directory(
    model_id: str, recipe_dir: Path | None, local_models: LocalModels | None, *, source: str | None,
) -> ModelConfigSource | None:
    candidates = [Path(model_id).expanduser()]
    if recipe_dir is not None and not Path(model_id).is_absolute():
        candidates.append(recipe_dir / model_id)
    for directory in candidates:
        config_file = directory / "config.json"
        if config_file.is_file():
            # Placed before the read: a folder outside what the settings allow is not opened.
            label = None if local_models is None else local_models.label(
                directory, model_id=model_id, recipe_dir=recipe_dir, source=source)
            return ModelConfigSource(kind="local", location=str(config_file), config=_read_json(config_file, source),
                                     local_label=label)
    return None


def _from_configs_folder(model_id: str, configs_dir: Path, *, source: str | None) -> ModelConfigSource | None:
    entry = find_folder_config(configs_dir, model_id)
    if entry is None:
        return None
    try:
        content = entry.config_file.read_bytes()
        record = read_pull_record(entry.folder, content)
    except OSError as error:
        raise ConfigSourceError(f"cannot read {entry.config_file}: {error}", source=source) from error
    except ConfigSourceError as error:
        raise ConfigSourceError(error.message, source=source) from error
    return ModelConfigSource(
        kind="configs",
        location=entry.location,
        config=_parse_json(content.decode("utf-8", errors="replace"), str(entry.config_file), source),
        provenance=record.source if record is not None else None,
        revision=record.revision if record is not None else None,
    )


def _from_registry(model_id: str, *, source: str | None) -> ModelConfigSource | None:
    file_name = _registry_names().get(registry_file_name(model_id).lower())
    if file_name is None:
        return None
    text = _registry_text(file_name)
    if text is None:
        return None
    data = _parse_json(text, f"registry entry {file_name}", source)
    if not isinstance(data.get("config"), Mapping):
        raise ConfigSourceError(f"registry entry {file_name} has no `config` mapping", source=source)
    return ModelConfigSource(
        kind="registry",
        location=f"registry:{file_name}",
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


def _from_hub(model_id: str, *, source: str | None) -> ModelConfigSource | None:
    from mmfreeze.models.hub import fetch_config

    try:
        fetched = fetch_config(model_id)
    except ConfigSourceError as error:  # the hub's errors name the id; the check names the recipe
        raise ConfigSourceError(error.message, source=source, key="model.pretrained_model_name_or_path") from error
    return _from_hub_bytes(fetched, kind="hub", source=source)


def _from_hub_bytes(fetched: FetchedConfig | None, *, kind: SourceKind, source: str | None) -> ModelConfigSource | None:
    if fetched is None:
        return None
    return ModelConfigSource(kind=kind, location=f"{fetched.model_id}@{fetched.commit}",
                             config=_parse_json(fetched.content.decode("utf-8", "replace"), fetched.origin, source),
                             revision=fetched.commit)


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
