"""`install()` and `mmfreeze train` refuse what they cannot do exactly, and patch nothing then.

These run in the main environment, where nemo-automodel 0.7.0 is installed without its
dependencies: its training code does not import there, which is a real missing hook point.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import cli
from mmfreeze.exceptions import IntegrationError
from mmfreeze.nemo import release
from mmfreeze.nemo.context import read_run_context
from mmfreeze.nemo.activate import ACTIVATE_ENV, GUARD_ENV, PREFIX_ENV, RECIPE_ENV
from mmfreeze.nemo.launch import ACTIVATION_DIR, activation_environment, find_recipe
from tests.nemo.framework_env import FRAMEWORK_IMPORTABLE

without_framework_dependencies = pytest.mark.skipif(
    FRAMEWORK_IMPORTABLE, reason="proves the refusal where the framework's training code does not import "
                                 "(the main environment); .venv-framework has every dependency")


NEEDS_FREEZE = "model: {}\nfreeze_config:\n  vision: {tower: true}\n"
"""A `(modality, role)` section where 0.7 reads freeze_config: only the integration can train it."""
NATIVE = "model: {}\nfreeze_config:\n  freeze_modules: [{path: model.visual}]\n"


@without_framework_dependencies
def test_install_without_the_frameworks_training_code_names_what_is_missing_and_patches_nothing(tmp_path: Path) -> None:
    from nemo_automodel.components.utils import model_utils

    from mmfreeze import nemo

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(NEEDS_FREEZE)
    originals = (model_utils.parse_freeze_config, model_utils.apply_parameter_freezing)
    with pytest.raises(IntegrationError, match="lacks hook points") as raised:
        nemo.install(recipe, guard=False)
    assert "nemo_automodel._transformers.infrastructure:apply_parameter_freezing" in str(raised.value)
    assert (model_utils.parse_freeze_config, model_utils.apply_parameter_freezing) == originals
    assert nemo.installed() is None


def test_a_recipe_the_framework_runs_natively_is_not_patched_at_all(tmp_path: Path) -> None:
    from mmfreeze import nemo

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(NATIVE)
    installation = nemo.install(recipe, guard=False)
    try:
        assert installation.patches == () and installation.context.needs == frozenset()
    finally:
        installation.uninstall()
    recipe.write_text(NEEDS_FREEZE)
    assert read_run_context(recipe).needs == frozenset({"freeze"})


def test_an_unsupported_release_is_refused_and_a_pre_0_7_one_names_the_hazard(monkeypatch: pytest.MonkeyPatch) -> None:
    # A mock: another nemo-automodel release cannot be installed beside the tested one.
    monkeypatch.setattr(release, "installed_version", lambda package: "0.6.2")
    with pytest.raises(IntegrationError) as raised:
        release.check_supported_release()
    message = str(raised.value)
    assert "nemo-automodel 0.6.2 is installed, but the integration supports only 0.7.0; nothing was patched" in message
    assert "defaults freeze_vision_tower to true" in message


def test_a_missing_framework_is_refused_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(release, "installed_version", lambda package: "missing")
    with pytest.raises(IntegrationError, match=r"pip install nemo-automodel==0\.7\.0"):
        release.check_supported_release()


@pytest.mark.parametrize(("command", "expected"), [
    (["automodel", "RECIPE", "--nproc-per-node", "2"], "RECIPE"),
    (["torchrun", "--nproc-per-node", "2", "train.py", "-c", "RECIPE"], "RECIPE"),
    (["python", "-c", "print(1)", "--config=RECIPE"], "RECIPE"),
])
def test_the_launcher_finds_the_recipe_the_command_trains(command: list[str], expected: str, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\n")
    resolved = [str(recipe) if part.endswith("RECIPE") and "=" not in part else part.replace("RECIPE", str(recipe))
                for part in command]
    assert find_recipe(resolved) == recipe


def test_a_command_without_a_recipe_is_an_error_naming_the_command() -> None:
    with pytest.raises(IntegrationError, match="no recipe in the command `automodel --nproc-per-node 2`"):
        find_recipe(["automodel", "--nproc-per-node", "2"])


def test_the_activation_environment_puts_the_activation_first_and_names_the_recipe(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    env = activation_environment(recipe, guard=False, environ={"PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ACTIVATION_DIR), "/elsewhere"]
    assert (env[ACTIVATE_ENV], env[RECIPE_ENV], env[GUARD_ENV], env[PREFIX_ENV]) == ("1", str(recipe.resolve()), "0",
                                                                                     sys.prefix)
    assert GUARD_ENV not in activation_environment(recipe, guard=None, environ={GUARD_ENV: "0"})


@pytest.mark.slow  # a fresh process imports the framework as far as its first missing dependency
@without_framework_dependencies
def test_a_process_that_cannot_install_what_its_recipe_needs_exits_3_when_it_imports_the_framework(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(NEEDS_FREEZE)
    env = activation_environment(recipe, guard=False)
    untouched = subprocess.run([sys.executable, "-c", "print('ran')"], env=env, capture_output=True, text=True)
    assert (untouched.returncode, untouched.stdout) == (0, "ran\n"), "a process that never imports the framework"
    completed = subprocess.run([sys.executable, "-c", "import nemo_automodel; print('trained')"], env=env,
                               capture_output=True, text=True)
    assert completed.returncode == 3
    assert "trained" not in completed.stdout
    assert completed.stderr.startswith("mmfreeze train: mmfreeze.nemo: the installed nemo-automodel lacks hook points")
    assert "Traceback" not in completed.stderr


@without_framework_dependencies
def test_mmfreeze_train_fails_before_starting_the_command_when_the_recipe_needs_what_cannot_be_installed(
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(NEEDS_FREEZE)
    marker = tmp_path / "ran"
    result = CliRunner().invoke(cli, ["train", "--", "touch", str(marker), str(recipe)])
    assert result.exit_code == 3
    assert "lacks hook points" in result.output
    assert not marker.exists()


@pytest.mark.parametrize(("text", "refusal"), [
    ("skypilot: {cloud: aws}\n", "launches through skypilot, whose remote processes do not get this environment"),
    ("nemo_run: {executor: slurm}\n", "launches through nemo_run"),
    ("recipe: nemo_automodel.recipes.diffusion.train.TrainDiffusionRecipe\n", "never reads freeze_config"),
    ("recipe: KnowledgeDistillationRecipeForLLM\nseparate_meshes: true\ndistributed: {pp_size: 2}\n",
     "knowledge distillation with separate meshes and pipeline stages"),
])
def test_a_launch_the_guard_cannot_reach_is_refused_before_it_starts(tmp_path: Path, text: str, refusal: str) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(NATIVE + text)
    marker = tmp_path / "ran"
    result = CliRunner().invoke(cli, ["train", "--", "touch", str(marker), str(recipe)])
    assert result.exit_code == 3 and refusal in " ".join(result.output.split()), result.output
    assert not marker.exists()
    assert CliRunner().invoke(cli, ["train", "--no-guard", "--", "touch", str(marker), str(recipe)]).exit_code == 0
    assert marker.exists()


@pytest.mark.parametrize(("text", "error"), [
    ("mmfreeze: {guard: maybe}\n", "mmfreeze.guard: must be true or false, got 'maybe'"),
    ("mmfreeze: {gaurd: false}\n", "mmfreeze: expected a mapping of `freeze_config`, `param_group_overrides`, `compiled_for`, `guard`, `gradients`"),
    ("mmfreeze: {gradients: 1}\n", "mmfreeze.gradients: must be true or false, got 1"),
])
def test_a_bad_guard_key_names_the_recipe_and_the_key(text: str, error: str, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\n" + text)
    with pytest.raises(IntegrationError, match=error.replace("{", r"\{").replace("}", r"\}").replace("`", "`")):
        read_run_context(recipe)


def test_the_recipe_opts_in_to_the_gradient_check(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\n")
    assert not read_run_context(recipe).gradients
    recipe.write_text("model: {}\nmmfreeze: {gradients: true}\n")
    assert read_run_context(recipe).gradients and read_run_context(recipe).guard


def test_the_recipe_key_turns_the_guard_off_and_the_caller_wins(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\nmmfreeze: {guard: false}\n")
    assert read_run_context(recipe).guard is False
    assert read_run_context(recipe, guard=True).guard is True
    assert read_run_context(None).guard is True  # on by default: without a recipe the optimizer build says so
