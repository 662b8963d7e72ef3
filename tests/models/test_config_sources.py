from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmfreeze.exceptions import ConfigSourceError
from mmfreeze.models.config_sources import find_model_config, registry_file_name


def test_local_directory_with_config_json_wins(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps({"model_type": "llava"}))
    found = find_model_config("ckpt", recipe_dir=tmp_path)
    assert (found.kind, found.config) == ("local", {"model_type": "llava"})


def test_unknown_model_id_says_how_to_add_it() -> None:
    with pytest.raises(ConfigSourceError) as caught:
        find_model_config("nobody/no-such-model", source="r.yaml")
    message = str(caught.value)
    assert "r.yaml" in message and registry_file_name("nobody/no-such-model") in message
    assert "--allow-network" in message


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
