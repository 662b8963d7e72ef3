from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmfreeze.exceptions import ConfigSourceError, MissingModelConfigError
from mmfreeze.models.config_sources import find_model_config, registry_file_name


def test_local_directory_with_config_json_wins(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps({"model_type": "llava"}))
    found = find_model_config("ckpt", recipe_dir=tmp_path)
    assert (found.kind, found.config) == ("local", {"model_type": "llava"})


def test_unknown_model_id_says_how_to_add_it_without_touching_the_installed_package() -> None:
    with pytest.raises(MissingModelConfigError) as caught:
        find_model_config("nobody/no-such-model", source="r.yaml")
    message = str(caught.value)
    assert caught.value.model_id == "nobody/no-such-model"
    assert "r.yaml" in message and "[tool.mmfreeze]" in message and "mmfreeze configs pull" in message
    assert "--allow-network" in message and "mmfreeze/registry" not in message


def test_unknown_model_id_with_a_configs_folder_names_the_file_to_add(tmp_path: Path) -> None:
    with pytest.raises(MissingModelConfigError, match="add .*nobody/no-such-model/config.json"):
        find_model_config("nobody/no-such-model", configs_dir=tmp_path / "configs")


def test_configs_folder_comes_before_the_registry_and_matches_ids_case_insensitively(tmp_path: Path) -> None:
    folder = tmp_path / "configs" / "Qwen" / "Qwen2-VL-2B-Instruct"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2_vl", "from": "configs"}))
    found = find_model_config("qwen/qwen2-vl-2b-instruct", configs_dir=tmp_path / "configs")
    assert (found.kind, found.location) == ("configs", "configs:Qwen/Qwen2-VL-2B-Instruct/config.json")
    assert found.config["from"] == "configs" and (found.provenance, found.revision) == (None, None)
    assert find_model_config("Qwen/Qwen2-VL-2B-Instruct").kind == "registry"


def test_invalid_local_json_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{\n  nope\n}")
    with pytest.raises(ConfigSourceError, match=r"config.json is not valid JSON \(line 2\)"):
        find_model_config(str(tmp_path))


def test_registry_file_names_cannot_collide_across_orgs() -> None:
    assert registry_file_name("a/b-c") != registry_file_name("a-b/c")


def test_registry_ids_match_case_insensitively_as_the_hub_does() -> None:
    found = find_model_config("google/gemma-3n-e4b-it")
    assert found.kind == "registry" and found.location == "registry:google__gemma-3n-E4B-it.json"
    assert found.config == find_model_config("google/gemma-3n-E4B-it").config
