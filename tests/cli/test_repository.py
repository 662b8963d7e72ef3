"""Adopting mmfreeze in a real repository: ``[tool.mmfreeze]`` settings, a configs folder for models
mmfreeze does not bundle, exclusions, YAML that is not a recipe, and snapshot paths that do not
depend on the folder a command runs from. Every command runs in a subprocess, in a real git
repository made for the test."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.conftest import EXAMPLE_CONFIGS, MMFREEZE, top_level_environment

TINY_QWEN2_VL = {
    "model_type": "qwen2_vl", "architectures": ["Qwen2VLForConditionalGeneration"], "tie_word_embeddings": True,
    "image_token_id": 120, "video_token_id": 121, "vision_start_token_id": 122,
    "text_config": {
        "model_type": "qwen2_vl_text", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "max_position_embeddings": 512,
        "tie_word_embeddings": True, "rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
    },
    "vision_config": {
        "model_type": "qwen2_vl", "depth": 2, "embed_dim": 32, "hidden_size": 64, "mlp_ratio": 2, "num_heads": 4,
        "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_chans": 3, "hidden_act": "quick_gelu",
    },
}
SETTINGS = """\
[project]
name = "team-recipes"

[tool.mmfreeze]
configs = "configs"
exclude = ["{recipes}/custom/**"]
snapshots = "ci/snapshots"

[tool.mmfreeze.allow_targets]
"team_models.TeamVLM.from_pretrained" = "AutoModelForImageTextToText"
"""
TEAM_RECIPE = """\
model:
  _target_: {target}
  pretrained_model_name_or_path: tiny-org/tiny-qwen2-vl   # configs/tiny-org/Tiny-Qwen2-VL: ids match like the Hub's
freeze_config:
  vision: {{tower: true, projector: false}}
  language_model: false
"""
UNBUILDABLE = """\
model:
  _target_: team_models.custom_code.build_model   # not in any allowlist: excluded
  pretrained_model_name_or_path: tiny-org/tiny-qwen2-vl
"""
NOT_A_RECIPE = "# evaluation datasets, read by the training script\ndatasets:\n  - {name: docvqa, split: validation}\n"


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true"}
    return subprocess.run([*MMFREEZE, "snapshot", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def make_repository(root: Path, recipes: str, *, corpus: Path | None = None) -> Path:
    """A git repository: ``[tool.mmfreeze]`` settings, ``configs/`` holding one model the registry lacks,
    recipes (a copy of ``corpus`` plus two naming that model), one excluded recipe with an unknown
    ``_target_``, one YAML file that is not a recipe."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    if corpus is not None:
        shutil.copytree(corpus, root / recipes)
    (root / "pyproject.toml").write_text(SETTINGS.format(recipes=recipes))
    model = root / "configs" / "tiny-org" / "Tiny-Qwen2-VL"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(TINY_QWEN2_VL, indent=2))
    files = {
        f"{recipes}/team/tiny_qwen2_vl_vision_frozen.yaml": TEAM_RECIPE.format(
            target="nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained"),
        f"{recipes}/team/tiny_qwen2_vl_team_target.yaml": TEAM_RECIPE.format(target="team_models.TeamVLM.from_pretrained"),
        f"{recipes}/custom/custom_code_model.yaml": UNBUILDABLE,
        f"{recipes}/data/eval_datasets.yaml": NOT_A_RECIPE,
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def tree_digest(root: Path) -> dict[str, str]:
    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and ".git" not in path.parts}


def assert_ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr


def assert_update_and_check_agree_from_root_and_subfolder(repo: Path, recipes: str, subfolder: str) -> None:
    """`--update` then `--check` exit 0 from the root and from a subfolder, and both write the same files."""
    update = run(repo, "--update", recipes)
    assert_ok(update)
    assert "1 YAML file skipped: no `model:` section" in update.stderr
    assert "1 recipe excluded by [tool.mmfreeze] exclude" in update.stderr
    written = tree_digest(repo)
    assert_ok(run(repo, "--check", recipes))
    below = repo / subfolder
    assert_ok(run(below, "--check", "."))
    assert_ok(run(below, "--update", "."))
    assert_ok(run(below / "team", "--check", os.path.relpath(repo / recipes, below / "team")))  # ../..
    assert tree_digest(repo) == written  # nothing new anywhere: no snapshots/ tree under the subfolder
    snapshots = repo / "ci" / "snapshots" / recipes / "team"
    assert sorted(p.name for p in snapshots.iterdir()) == [
        "tiny_qwen2_vl_team_target.yaml.frozen.txt", "tiny_qwen2_vl_vision_frozen.yaml.frozen.txt"]
    header = (snapshots / "tiny_qwen2_vl_vision_frozen.yaml.frozen.txt").read_text()
    assert f"recipe: {recipes}/team/tiny_qwen2_vl_vision_frozen.yaml" in header
    assert not (repo / "ci" / "snapshots" / recipes / "custom").exists()
    assert not (repo / "ci" / "snapshots" / recipes / "data").exists()


@pytest.mark.slow  # an mmfreeze process per folder
def test_a_team_repository_checks_the_same_snapshots_from_any_folder(tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "recipes")
    assert_update_and_check_agree_from_root_and_subfolder(repo, "recipes", "recipes")


@pytest.mark.slow
def test_the_whole_example_corpus_in_a_team_repository_checks_from_any_folder(tmp_path: Path) -> None:
    """The issue's acceptance test: every bundled recipe plus the team's own in a fresh repository."""
    repo = make_repository(tmp_path / "repo", "example_configs", corpus=EXAMPLE_CONFIGS)
    assert_update_and_check_agree_from_root_and_subfolder(repo, "example_configs", "example_configs")
    count = sum(1 for _ in (repo / "ci" / "snapshots").rglob("*.frozen.txt"))
    assert count == sum(1 for _ in EXAMPLE_CONFIGS.rglob("*.yaml")) + 2


def test_a_path_with_no_recipe_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "recipes")
    data = run(repo, "--check", "recipes/data")
    assert data.returncode == ExitCode.USAGE
    assert "recipes/data holds no recipe: 1 YAML file without a top-level `model:` section" in data.stderr
    excluded = run(repo, "--check", "recipes/custom")
    assert excluded.returncode == ExitCode.USAGE and "1 recipe excluded by [tool.mmfreeze] exclude" in excluded.stderr
    named = run(repo, "--check", "recipes/data/eval_datasets.yaml")
    assert named.returncode == ExitCode.USAGE


def test_excluding_a_checked_recipe_orphans_its_snapshot(tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "recipes")
    assert_ok(run(repo, "--update", "recipes"))
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"recipes/custom/**"', '"recipes/custom/**", "recipes/team/*_target.yaml"'))
    snapshot = repo / "ci" / "snapshots" / "recipes" / "team" / "tiny_qwen2_vl_team_target.yaml.frozen.txt"
    check = run(repo, "--check", "recipes")
    assert check.returncode == ExitCode.ORPHANED and snapshot.is_file(), check.stdout + check.stderr
    assert_ok(run(repo, "--update", "recipes"))
    assert not snapshot.exists()


def test_invalid_settings_are_a_usage_error_naming_the_key(tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "recipes")
    (repo / "pyproject.toml").write_text('[tool.mmfreeze]\nconfig = "configs"\n')
    result = run(repo / "recipes", "--check", ".")
    assert result.returncode == ExitCode.USAGE
    assert "pyproject.toml: tool.mmfreeze.config: unknown setting (did you mean 'configs'?)" in result.stderr


def test_the_repositorys_own_pytest_run_applies_the_same_settings(tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "recipes")
    assert_ok(run(repo, "--update", "recipes"))
    with (repo / "pyproject.toml").open("a") as file:
        file.write('\n[tool.pytest.ini_options]\ntestpaths = ["recipes"]\nmmfreeze_recipes = ["recipes"]\n')
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(pytest_run, cwd=repo, env=top_level_environment(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "2 passed" in result.stdout, result.stdout + result.stderr


def test_migrate_and_explain_apply_the_same_settings(tmp_path: Path) -> None:
    """`migrate` skips the excluded recipe and the data file and finds the team's model in `configs/`
    (its new-vocabulary recipes would be compiled for the release: exit 1 under `--check`);
    `explain` accepts the team's `_target_` and reads the same config, from a subfolder."""
    repo = make_repository(tmp_path / "repo", "recipes")
    env = {**os.environ, "CI": "true"}
    migrate = subprocess.run([*MMFREEZE, "migrate", "--check", "recipes"], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=600)
    assert migrate.returncode == ExitCode.CHANGED, migrate.stdout + migrate.stderr
    assert "2 files: 2 preserved" in migrate.stdout and migrate.stderr.count("rules: MF006") == 2, migrate.stderr
    assert "custom_code_model" not in migrate.stdout + migrate.stderr and "eval_datasets" not in migrate.stdout + migrate.stderr
    explain = subprocess.run([*MMFREEZE, "explain", "tiny_qwen2_vl_team_target.yaml", "--format", "json"],
                             cwd=repo / "recipes" / "team", env=env, capture_output=True, text=True, timeout=600)
    assert explain.returncode == ExitCode.OK, explain.stdout + explain.stderr
    explanation = json.loads(explain.stdout)
    assert explanation["config_source"]["kind"] == "configs"
    assert explanation["recipe"] == "recipes/team/tiny_qwen2_vl_team_target.yaml"


@pytest.mark.slow
def test_a_preserve_migration_of_the_team_repository_leaves_every_snapshot_byte_identical(tmp_path: Path) -> None:
    """Snapshots hold behaviour only: rewriting recipes to the new vocabulary (here the shipped
    0.7-selector recipe) changes recipe files, not one snapshot byte."""
    repo = make_repository(tmp_path / "repo", "example_configs", corpus=EXAMPLE_CONFIGS)
    assert_ok(run(repo, "--update", "example_configs"))
    snapshots = tree_digest(repo / "ci" / "snapshots")
    recipes = tree_digest(repo / "example_configs")
    env = {**os.environ, "CI": "true"}
    migrate = subprocess.run([*MMFREEZE, "migrate", "example_configs"], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=900)
    assert migrate.returncode == ExitCode.OK, migrate.stdout + migrate.stderr
    assert tree_digest(repo / "example_configs") != recipes  # the migration did rewrite recipes
    assert_ok(run(repo, "--check", "example_configs"))
    assert tree_digest(repo / "ci" / "snapshots") == snapshots
