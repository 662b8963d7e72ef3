"""`configs pull` as a library: plan from files, fetch from a real HTTP hub on the loopback address."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmfreeze.exceptions import ConfigSourceError
from mmfreeze.freeze.recipe_model import recipe_model_reader
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.models.pull import plan_pull, pull_config
from mmfreeze.recipes.documents import YamlDocuments
from tests.cli.test_explain import TINY_LLAVA
from tests.models.local_hub import LocalHub

RECIPE = "model:\n  _target_: transformers.AutoModelForImageTextToText.from_pretrained\n  pretrained_model_name_or_path: {}\n"
CONFIG = json.dumps(TINY_LLAVA, indent=2).encode()


def recipes(root: Path, model_ids: dict[str, str]) -> list[Path]:
    paths = []
    for name, model_id in model_ids.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(RECIPE.format(model_id))
        paths.append(root / name)
    return paths


def test_the_plan_lists_ids_no_carried_source_has_once_whatever_their_case(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    paths = recipes(tmp_path, {
        "a.yaml": "tiny-org/Tiny-Llava", "b.yaml": "TINY-ORG/tiny-llava", "c.yaml": "Qwen/Qwen2-VL-2B-Instruct",
        "d.yaml": "ckpt", "e.yaml": "./not/a/dir",
    })
    reader = recipe_model_reader(YamlDocuments(tmp_path), root=tmp_path)
    plan = plan_pull(paths, configs_dir=tmp_path / "configs", read_model=reader)
    assert plan.missing == {"tiny-org/Tiny-Llava": ["a.yaml", "b.yaml"]}
    assert plan.available == {"Qwen/Qwen2-VL-2B-Instruct": "registry", "ckpt": "local"}
    assert [(e.source, "neither a directory" in e.message) for e in plan.errors] == [("e.yaml", True)]


def test_a_pull_writes_the_hubs_file_unchanged_with_the_commit_it_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalHub({"tiny-org/Tiny-Llava": {"config.json": CONFIG}}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        pulled = pull_config("tiny-org/tiny-llava", tmp_path / "configs", hub_cache=tmp_path / "hf")
    assert pulled.revision == hub.commit_of("tiny-org/Tiny-Llava")
    assert pulled.config_file == tmp_path / "configs" / "tiny-org" / "tiny-llava" / "config.json"
    assert pulled.config_file.read_bytes() == CONFIG
    found = find_model_config("Tiny-Org/Tiny-Llava", configs_dir=tmp_path / "configs")
    assert (found.kind, found.revision, found.provenance) == ("configs", pulled.revision, "hub")


def test_an_id_the_hub_does_not_have_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalHub({}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        with pytest.raises(ConfigSourceError, match="RepositoryNotFoundError") as caught:
            pull_config("nobody/nothing", tmp_path / "configs", hub_cache=tmp_path / "hf")
    assert caught.value.source == "nobody/nothing" and not (tmp_path / "configs").exists()
