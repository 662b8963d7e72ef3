"""A key the declared release ignores is an input error with a did-you-mean, under 0.6 as under 0.7.

nemo-automodel 0.6 read `freeze_config` with ``dict.get``: a misspelt ``freeze_vison_tower`` was
ignored and the tower frozen by default, so `snapshot` accepted the recipe (exit 0) while the
recipe meant something else. The keys 0.6 really read (the four flags) and ``freeze_embeddings``
(which its recipes carried) stay valid, values still by truthiness.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.framework import parse_framework_freeze_config
from mmfreeze.freeze.keys import RELEASE_06_KEYS, release_06_problems
from mmfreeze.recipes.recipe import read_yaml
from mmfreeze.boundary.releases import FrameworkRules
from tests.cli.test_explain import TINY_LLAVA
from tests.conftest import LEGACY_CORPUS, MMFREEZE

DECLARED_06 = FrameworkRules(release="0.6", reason="[tool.mmfreeze] framework")
RECIPE = """\
model:
  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained
  pretrained_model_name_or_path: {ckpt}
freeze_config:
  {key}: {value}
"""


@pytest.mark.parametrize(("section", "message"), [
    ({"freeze_vison_tower": False}, "freeze_config.freeze_vison_tower: unknown key (did you mean 'freeze_vision_tower'?)"),
    ({"freeze_language_modle": True}, "unknown key (did you mean 'freeze_language_model'?)"),
    ({"freeze_vision_tower": True, "freeze_everything": True}, "freeze_config.freeze_everything: unknown key"),
    ({"freeze_modules": [{"path": "model.visual"}]}, "freeze_config.freeze_modules: module selectors came with 0.7"),
    ({"unfreeze_modules": [{"glob": "*"}]}, "freeze_config.unfreeze_modules: module selectors came with 0.7"),
])
def test_a_key_0_6_ignores_is_an_input_error_under_0_6(section: dict, message: str) -> None:
    with pytest.raises(FreezeConfigError) as caught:
        parse_framework_freeze_config(section, DECLARED_06, source="recipes/r.yaml")
    assert message in caught.value.message and "nemo-automodel 0.6 ignores" in caught.value.message
    assert (caught.value.source, caught.value.key) == ("recipes/r.yaml", "freeze_config")


@pytest.mark.parametrize("section", [
    {"freeze_vision_tower": False, "freeze_embeddings": True},
    {"freeze_audio_tower": "yes", "freeze_language_model": 0, "freeze_video_embedder": True},
    {},
])
def test_the_keys_0_6_read_stay_valid_and_count_by_truthiness(section: dict) -> None:
    config = parse_framework_freeze_config(section, DECLARED_06, source="r.yaml")
    assert config.flags["freeze_vision_tower"] == bool(section.get("freeze_vision_tower", True))
    assert config.flags["freeze_audio_tower"] == bool(section.get("freeze_audio_tower", False))


def test_every_section_of_the_0_6_era_corpus_uses_only_keys_0_6_read() -> None:
    """The pre-migration corpus declares 0.6: none of its legacy sections may become an error."""
    checked = 0
    for path in sorted(LEGACY_CORPUS.rglob("*.yaml")):
        section = read_yaml(path).get("freeze_config")
        if isinstance(section, dict) and all(str(key).startswith("freeze_") for key in section):
            assert release_06_problems(section) == [], path
            checked += 1
    assert checked > 50 and set(RELEASE_06_KEYS) >= {"freeze_embeddings", "freeze_vision_tower"}


@pytest.fixture
def repo_06(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.mmfreeze]\nframework = "0.6"\n')
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    (tmp_path / "recipes").mkdir()
    return tmp_path


def write(repo: Path, name: str, key: str, value: str = "false") -> Path:
    path = repo / "recipes" / name
    path.write_text(RECIPE.format(ckpt="../ckpt", key=key, value=value))
    return path


def test_explain_under_0_6_names_a_misspelt_flag_and_the_right_one(repo_06: Path) -> None:
    recipe = write(repo_06, "typo.yaml", "freeze_vison_tower")
    result = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    flat = " ".join(result.stderr.split())
    assert "freeze_config: nemo-automodel 0.6 ignores freeze_config.freeze_vison_tower: unknown key " \
           "(did you mean 'freeze_vision_tower'?)" in flat


def test_snapshot_in_a_0_6_repository_exits_3_on_a_misspelt_flag_and_0_on_freeze_embeddings(repo_06: Path) -> None:
    """Before: the typo was snapshotted with exit 0 (0.6's rules ignored it)."""
    write(repo_06, "typo.yaml", "freeze_vison_tower")
    write(repo_06, "era.yaml", "freeze_embeddings", "true")
    env = {**os.environ, "CI": "true"}
    result = subprocess.run([*MMFREEZE, "snapshot", "--update", "recipes"], cwd=repo_06, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == ExitCode.INPUT_ERROR, result.stdout + result.stderr
    flat = " ".join(result.stdout.split())
    assert "recipes/typo.yaml: input error" in flat
    assert "unknown key (did you mean 'freeze_vision_tower'?)" in flat
    assert "recipes/era.yaml: new snapshot written" in flat
    assert not (repo_06 / "snapshots" / "recipes" / "typo.yaml.frozen.txt").exists()
