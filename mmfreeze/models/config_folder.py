"""The repository's folder of model configs (``[tool.mmfreeze] configs``).

Layout, one folder per model id, which is what downloading a checkpoint's ``config.json`` into a
local dir gives::

    <configs>/Qwen/Qwen2.5-VL-7B-Instruct/config.json     the Hub's file, byte for byte
    <configs>/Qwen/Qwen2.5-VL-7B-Instruct/mmfreeze.json   written by `mmfreeze configs pull`:
        {"model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "revision": "<commit sha>", "sha256": "<of config.json>",
         "source": "hub"}

``source`` says where the bytes came from: ``hub`` (downloaded, or the cache's copy of the commit
the hub named) or ``hf-cache`` (the local Hugging Face cache's copy of the commit its ``refs/main``
records, taken offline: nobody asked the hub whether that is still ``main``). A record written
before ``source`` existed came from the hub.

Ids are matched case-insensitively, as the Hub matches them. A ``config.json`` added by hand needs
no ``mmfreeze.json``; one whose content no longer matches its record's ``sha256`` is treated as
hand-made (no revision, no provenance).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import ConfigSourceError

CONFIG_FILE = "config.json"
RECORD_FILE = "mmfreeze.json"
PullSource = Literal["hub", "hf-cache"]
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def is_hub_id(model_id: str) -> bool:
    """Whether ``model_id`` can name a Hub repository (``org/name`` or a legacy ``name``)."""
    return bool(_HUB_ID.fullmatch(model_id)) and ".." not in model_id


@dataclass(frozen=True, kw_only=True)
class PullRecord:
    """Where a pulled config came from."""

    model_id: str
    revision: str
    """The commit sha of the Hub repository the file was downloaded at."""
    sha256: str
    """Of ``config.json`` as written: a later hand edit is detected."""
    source: PullSource = "hub"


@dataclass(frozen=True, kw_only=True)
class FolderConfig:
    """A model's entry in the configs folder."""

    folder: Path
    config_file: Path
    location: str
    """``configs:<org>/<name>/config.json``, as spelled on disk (stable across machines)."""


def model_folder(configs_dir: Path, model_id: str) -> Path:
    """Where ``model_id``'s entry is written: ``<configs>/<org>/<name>``, spelled as the recipe spells it."""
    return configs_dir.joinpath(*model_id.split("/"))


def find_folder_config(configs_dir: Path, model_id: str) -> FolderConfig | None:
    """``model_id``'s entry, matched case-insensitively, or ``None``."""
    if not is_hub_id(model_id):
        return None
    folder = _find_folder(configs_dir, model_id.split("/"))
    if folder is None:
        return None
    return FolderConfig(
        folder=folder,
        config_file=folder / CONFIG_FILE,
        location="configs:" + folder.relative_to(configs_dir).as_posix() + "/" + CONFIG_FILE,
    )


def _find_folder(configs_dir: Path, parts: list[str]) -> Path | None:
    exact = configs_dir.joinpath(*parts)
    if (exact / CONFIG_FILE).is_file():
        return exact
    folders = [configs_dir]
    for part in parts:
        folders = [child for folder in folders for child in _children_named(folder, part)]
    return next((folder for folder in sorted(folders) if (folder / CONFIG_FILE).is_file()), None)


def _children_named(folder: Path, name: str) -> list[Path]:
    try:
        return [Path(entry.path) for entry in os.scandir(folder) if entry.is_dir() and entry.name.lower() == name.lower()]
    except OSError:
        return []


def read_pull_record(folder: Path, content: bytes) -> PullRecord | None:
    """The folder's pull record when it still describes ``content`` (the config file's bytes)."""
    record_file = folder / RECORD_FILE
    if not record_file.is_file():
        return None
    try:
        record = PullRecord(**json.loads(record_file.read_text(encoding="utf-8")))
        if record.source not in get_args(PullSource):
            raise ValueError(f"source {record.source!r} is none of {', '.join(get_args(PullSource))}")
    except (OSError, ValueError, TypeError) as error:
        raise ConfigSourceError(
            f"{record_file} is not a pull record ({{\"model_id\", \"revision\", \"sha256\", \"source\"}}): "
            f"{error}; delete it and pull again"
        ) from error
    return record if hashlib.sha256(content).hexdigest() == record.sha256 else None


def write_pulled_config(configs_dir: Path, model_id: str, content: bytes, *, revision: str, source: PullSource) -> Path:
    """Write a pulled ``config.json`` (unchanged) and its record; returns the config file."""
    folder = model_folder(configs_dir, model_id)
    folder.mkdir(parents=True, exist_ok=True)
    record = PullRecord(model_id=model_id, revision=revision, sha256=hashlib.sha256(content).hexdigest(),
                        source=source)
    replace_file(folder / CONFIG_FILE, content)
    replace_file(folder / RECORD_FILE, (json.dumps(asdict(record), indent=2) + "\n").encode())
    return folder / CONFIG_FILE
