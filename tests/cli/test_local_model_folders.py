"""A recipe's local model directory (issue 48 item 8): read only inside the repository or in a
folder a setting names in words, and never stored in a snapshot by its absolute path. Real
folders, a real `mmfreeze snapshot` process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.exceptions import ConfigSourceError
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.settings import LocalModels
from tests.cli.test_configs import RECIPE
from tests.cli.test_explain import TINY_LLAVA
from tests.conftest import MMFREEZE


def model_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(TINY_LLAVA))
    return folder


def team_repo(root: Path, model_path: Path, settings: str = "") -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f"[tool.mmfreeze]\nbuilder = \"transformers\"\n{settings}")
    (root / "recipes").mkdir()
    (root / "recipes" / "a.yaml").write_text(RECIPE.format(model_path))
    return root


def snapshot_update(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MMFREEZE, "snapshot", "--update", "recipes"], cwd=repo, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CI": "true"})


def test_a_model_folder_outside_the_repository_is_refused_unread_naming_the_setting(tmp_path: Path) -> None:
    outside = model_folder(tmp_path / "elsewhere" / "tiny")
    repo = team_repo(tmp_path / "repo", outside)
    result = snapshot_update(repo)
    assert result.returncode == ExitCode.INPUT_ERROR, result.stdout + result.stderr
    said = " ".join((result.stdout + result.stderr).split())  # the report wraps long lines
    assert (f"recipes/a.yaml: model.pretrained_model_name_or_path: '{outside}' is a model folder at {outside}, "
            f"outside the repository {repo}") in said
    assert f'[tool.mmfreeze.model_folders] models = "{outside.parent}"' in said
    assert not (repo / "snapshots").exists()


@pytest.mark.slow  # builds the model in a process of its own
def test_a_model_folder_a_setting_names_is_read_and_stored_by_that_name_never_by_its_absolute_path(
    tmp_path: Path,
) -> None:
    outside = model_folder(tmp_path / "elsewhere" / "tiny")
    repo = team_repo(tmp_path / "repo", outside, f'[tool.mmfreeze.model_folders]\nshared = "{outside.parent}"\n')
    result = snapshot_update(repo)
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    text = (repo / "snapshots" / "recipes" / "a.yaml.frozen.txt").read_text()
    assert "\nmodel_id: shared:tiny\n" in text and str(tmp_path) not in text


def test_a_local_model_is_named_from_the_repository_root_or_the_setting_and_refused_elsewhere(tmp_path: Path) -> None:
    inside = model_folder(tmp_path / "repo" / "models" / "tiny")
    shared = model_folder(tmp_path / "mnt" / "models" / "org" / "tiny")
    stray = model_folder(tmp_path / "stray")
    local = LocalModels(root=tmp_path / "repo", folders={"shared": tmp_path / "mnt" / "models"})
    labels = [find_model_config(str(path), local_models=local).local_label for path in (inside, shared)]
    assert labels == ["./models/tiny", "shared:org/tiny"]
    (tmp_path / "repo" / "recipes").mkdir()
    relative = find_model_config("../models/tiny", recipe_dir=tmp_path / "repo" / "recipes", local_models=local)
    assert relative.local_label == "./models/tiny"
    with pytest.raises(ConfigSourceError) as refused:
        find_model_config(str(stray), local_models=local, source="recipes/a.yaml")
    assert refused.value.key == "model.pretrained_model_name_or_path"
    assert "outside the repository" in refused.value.message and "the folders [tool.mmfreeze.model_folders] names (shared)" in refused.value.message
