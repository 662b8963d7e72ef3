"""The repository's configs folder: <org>/<name>/config.json, matched like the Hub, with pull records."""

from __future__ import annotations

import json
from pathlib import Path

from mmfreeze.models.config_folder import (
    find_folder_config,
    is_hub_id,
    model_folder,
    read_pull_record,
    write_pulled_config,
)
from mmfreeze.models.config_sources import find_model_config

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_an_entry_is_found_by_any_capitalisation_of_its_id(tmp_path: Path) -> None:
    folder = model_folder(tmp_path, "google/gemma-3n-E4B-it")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    for spelling in ("google/gemma-3n-E4B-it", "google/gemma-3n-e4b-it", "GOOGLE/GEMMA-3N-E4B-IT"):
        entry = find_folder_config(tmp_path, spelling)
        assert entry is not None and entry.location == "configs:google/gemma-3n-E4B-it/config.json"
    assert find_folder_config(tmp_path, "google/gemma-3n-e2b-it") is None


def test_a_folder_without_config_json_is_no_entry(tmp_path: Path) -> None:
    model_folder(tmp_path, "org/model").mkdir(parents=True)
    assert find_folder_config(tmp_path, "org/model") is None


def test_local_paths_are_never_looked_up_in_the_folder(tmp_path: Path) -> None:
    assert not is_hub_id("../ckpt") and not is_hub_id("/abs/path") and not is_hub_id("a/b/c")
    assert is_hub_id("Qwen/Qwen2.5-VL-7B-Instruct") and is_hub_id("gpt2")


def test_a_pulled_config_is_written_unchanged_with_its_revision(tmp_path: Path) -> None:
    content = b'{"model_type": "llava",\n "b": 1}\n'
    written = write_pulled_config(tmp_path, "Org/Model", content, revision=COMMIT, source="hub")
    assert written == tmp_path / "Org" / "Model" / "config.json" and written.read_bytes() == content
    record = json.loads((tmp_path / "Org" / "Model" / "mmfreeze.json").read_text())
    assert record["model_id"] == "Org/Model" and record["revision"] == COMMIT
    found = find_model_config("org/model", configs_dir=tmp_path)
    assert (found.kind, found.provenance, found.revision) == ("configs", "hub", COMMIT)


def test_a_config_edited_after_its_pull_no_longer_claims_the_revision(tmp_path: Path) -> None:
    write_pulled_config(tmp_path, "Org/Model", b'{"model_type": "llava"}', revision=COMMIT, source="hub")
    (tmp_path / "Org" / "Model" / "config.json").write_text('{"model_type": "llava", "edited": true}')
    assert read_pull_record(tmp_path / "Org" / "Model", b'{"model_type": "llava", "edited": true}') is None
    found = find_model_config("Org/Model", configs_dir=tmp_path)
    assert (found.provenance, found.revision, found.config["edited"]) == (None, None, True)
