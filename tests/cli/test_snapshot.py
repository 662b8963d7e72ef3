"""`mmfreeze snapshot` end to end, on a tiny Llava corpus copied to a temporary working directory.

Each call runs in a subprocess: the command runs its own pytest session, which must not share a
process (and syrupy's module state) with this test session.
"""

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
from tests.cli.test_explain import TINY_LLAVA
from tests.conftest import MMFREEZE, top_level_environment

RECIPE = """\
model:
  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained
  pretrained_model_name_or_path: {ckpt}
freeze_config:
  freeze_vision_tower: true
  freeze_language_model: {language}
"""


def write_recipe(path: Path, *, language: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ckpt = os.path.relpath(_ckpt_dir(path), path.parent)
    path.write_text(RECIPE.format(ckpt=ckpt, language=str(language).lower()))
    return path


def _ckpt_dir(recipe: Path) -> Path:
    for parent in recipe.parents:
        if (parent / "ckpt").is_dir():
            return parent / "ckpt"
    raise AssertionError("no ckpt folder above the recipe")


def run(cwd: Path, *args: str, ci: bool = True, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true" if ci else "", **environment}
    return subprocess.run([*MMFREEZE, "snapshot", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*")) if path.is_file()
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """recipes/vlm/{a,b}.yaml and recipes/other/c.yaml, with accepted snapshots."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    for name in ("vlm/a.yaml", "vlm/b.yaml", "other/c.yaml"):
        write_recipe(tmp_path / "recipes" / name)
    result = run(tmp_path, "recipes", "--update")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    return tmp_path


def test_update_then_check_passes_and_check_leaves_the_tree_byte_identical(corpus: Path) -> None:
    assert (corpus / "snapshots" / "recipes" / "vlm" / "a.yaml.frozen.txt").is_file()
    before = tree_digest(corpus)
    result = run(corpus, "recipes", "--check")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert tree_digest(corpus) == before


def test_flipping_a_freeze_flag_exits_changed_and_names_the_recipe_and_moved_parameters(corpus: Path) -> None:
    write_recipe(corpus / "recipes" / "vlm" / "a.yaml", language=False)
    before = tree_digest(corpus)
    result = run(corpus, "recipes", "--check")
    assert result.returncode == ExitCode.CHANGED
    assert "recipes/vlm/a.yaml: changed" in result.stdout
    assert "newly trainable" in result.stdout
    assert "model.language_model.layers.{0..1}.mlp.up_proj.weight" in result.stdout
    assert "recipes/vlm/b.yaml" not in result.stdout
    assert tree_digest(corpus) == before


def test_added_recipe_is_missing_under_check_and_written_by_the_local_default(corpus: Path) -> None:
    write_recipe(corpus / "recipes" / "vlm" / "new.yaml")
    result = run(corpus, "recipes", "--check")
    assert result.returncode == ExitCode.MISSING and "recipes/vlm/new.yaml: missing snapshot" in result.stdout
    assert run(corpus, "recipes").returncode == ExitCode.MISSING  # $CI set: the default is --check
    result = run(corpus, "recipes", ci=False)
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert (corpus / "snapshots" / "recipes" / "vlm" / "new.yaml.frozen.txt").is_file()


def test_deleted_recipe_is_orphaned_and_only_update_over_its_folder_deletes_the_snapshot(corpus: Path) -> None:
    (corpus / "recipes" / "other" / "c.yaml").unlink()
    orphan = corpus / "snapshots" / "recipes" / "other" / "c.yaml.frozen.txt"
    result = run(corpus, "recipes", "--check")
    assert result.returncode == ExitCode.ORPHANED and "recipe recipes/other/c.yaml is gone" in result.stdout
    assert orphan.is_file()
    result = run(corpus, "recipes", "--update")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert not orphan.exists() and not orphan.parent.exists()
    assert run(corpus, "recipes", "--check").returncode == ExitCode.OK


def test_a_check_started_from_an_xdist_worker_still_reports_and_deletes_orphans(corpus: Path) -> None:
    (corpus / "recipes" / "other" / "c.yaml").unlink()
    orphan = corpus / "snapshots" / "recipes" / "other" / "c.yaml.frozen.txt"
    result = run(corpus, "recipes", "--check", PYTEST_XDIST_WORKER="gw3")
    assert result.returncode == ExitCode.ORPHANED and "recipe recipes/other/c.yaml is gone" in result.stdout
    assert run(corpus, "recipes", "--update", PYTEST_XDIST_WORKER="gw3").returncode == ExitCode.OK
    assert not orphan.exists()


def test_subset_runs_never_report_or_delete_other_snapshots(corpus: Path) -> None:
    (corpus / "recipes" / "other" / "c.yaml").unlink()
    orphan = corpus / "snapshots" / "recipes" / "other" / "c.yaml.frozen.txt"
    for subset in ("recipes/vlm", "recipes/vlm/a.yaml"):
        result = run(corpus, subset, "--update")
        assert result.returncode == ExitCode.OK, result.stdout + result.stderr
        assert "orphan" not in result.stdout and orphan.is_file()


def test_unloadable_recipe_is_an_input_error_the_rest_is_checked_and_its_snapshot_kept(corpus: Path) -> None:
    (corpus / "recipes" / "vlm" / "b.yaml").write_text("model:\n  _target_: os.system\n  pretrained_model_name_or_path: x\n")
    write_recipe(corpus / "recipes" / "vlm" / "a.yaml", language=False)
    result = run(corpus, "recipes", "--update")
    assert result.returncode == ExitCode.INPUT_ERROR
    assert "recipes/vlm/b.yaml: input error" in result.stdout and "allowlist" in result.stdout
    assert (corpus / "snapshots" / "recipes" / "vlm" / "b.yaml.frozen.txt").is_file()
    assert "freeze_language_model" not in (corpus / "snapshots" / "recipes" / "vlm" / "a.yaml.frozen.txt").read_text()
    assert run(corpus, "recipes/vlm/a.yaml", "--check").returncode == ExitCode.OK


def test_report_markdown_to_a_file_and_json_to_stdout(corpus: Path) -> None:
    write_recipe(corpus / "recipes" / "vlm" / "a.yaml", language=False)
    result = run(corpus, "recipes", "--check", "--report", "markdown", "--report-file", "report.md")
    assert result.returncode == ExitCode.CHANGED
    markdown = (corpus / "report.md").read_text()
    assert markdown.index("| recipe | status |") < markdown.index("<details>")
    data = json.loads(run(corpus, "recipes", "--check", "--report", "json", "-q").stdout)
    assert data["summary"]["changed"] == 1
    (changed,) = [r for r in data["recipes"] if r["status"] == "changed"]
    assert changed["recipe"] == "recipes/vlm/a.yaml" and changed["change"]["newly_trainable"]


def test_snapshot_dir_option_puts_snapshots_elsewhere(corpus: Path) -> None:
    result = run(corpus, "recipes/vlm", "--update", "--snapshot-dir", "frozen")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert (corpus / "frozen" / "recipes" / "vlm" / "a.yaml.frozen.txt").is_file()


def test_update_and_check_together_is_a_usage_error(corpus: Path) -> None:
    assert run(corpus, "recipes", "--update", "--check").returncode == ExitCode.USAGE


def test_missing_path_is_an_input_error(corpus: Path) -> None:
    result = run(corpus, "nowhere", "--check")
    assert result.returncode == ExitCode.INPUT_ERROR and "no such file" in result.stderr


def test_a_folder_without_any_recipe_is_a_usage_error_not_a_clean_check(corpus: Path) -> None:
    (corpus / "empty" / "notes").mkdir(parents=True)
    (corpus / "empty" / "notes" / "README.md").write_text("no recipes here\n")
    result = run(corpus, "recipes", "empty", "--check")
    assert result.returncode == ExitCode.USAGE and "empty holds no YAML recipe" in result.stderr


def test_warm_check_imports_neither_torch_nor_transformers(corpus: Path) -> None:
    code = (
        "import sys\nfrom mmfreeze.cli.main import cli\n"
        "try:\n    cli(['snapshot', 'recipes', '--check', '-q'])\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "assert not {'torch', 'transformers'} & set(sys.modules), 'heavy import'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=corpus, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # three mmfreeze processes, cold builds
def test_a_recipe_that_cannot_build_is_reported_again_from_the_cache_without_torch(corpus: Path) -> None:
    """The failure is decided by the recipe's model and sections, so a warm run reads it back
    instead of building the model again (which imports torch and takes seconds)."""
    (corpus / "broken").mkdir()
    (corpus / "broken" / "config.json").write_text(json.dumps({**TINY_LLAVA, "text_config": {
        **TINY_LLAVA["text_config"], "num_attention_heads": 5}}))  # 64 is not divisible by 5
    (corpus / "recipes" / "vlm" / "broken.yaml").write_text(RECIPE.format(ckpt="../../broken", language="false"))
    cold = run(corpus, "recipes", "--check")
    assert cold.returncode == ExitCode.INPUT_ERROR and "recipes/vlm/broken.yaml" in cold.stdout
    code = (
        "import sys\nfrom mmfreeze.cli.main import cli\n"
        "try:\n    cli(['snapshot', 'recipes', '--check', '-q'])\nexcept SystemExit as e:\n    print('exit', int(e.code))\n"
        "print('heavy' if {'torch', 'transformers'} & set(sys.modules) else 'light')\n"
    )
    warm = subprocess.run([sys.executable, "-c", code], cwd=corpus, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CI": "true"})
    assert warm.stdout.split()[-3:] == ["exit", str(int(ExitCode.INPUT_ERROR)), "light"], warm.stdout + warm.stderr
    assert _input_error_lines(warm.stdout) == _input_error_lines(cold.stdout)


def _input_error_lines(report: str) -> list[str]:
    return [line for line in report.splitlines() if "input error" in line]


def test_warm_check_reads_cached_frozen_sets_and_no_structure(corpus: Path) -> None:
    cache = corpus / "cache"
    # the corpus fixture built the model into the run's cache: a copy of those structures lets the
    # first check compute the frozen sets without a second cold build
    shutil.copytree(Path(os.environ["MMFREEZE_CACHE_DIR"]) / "structures", cache / "structures")
    assert run(corpus, "recipes", "--check", "--cache-dir", str(cache)).returncode == ExitCode.OK
    shutil.rmtree(cache / "structures")
    result = run(corpus, "recipes", "--check", "--cache-dir", str(cache))
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert not (cache / "structures").exists()


@pytest.mark.slow  # a cold build in a fresh process: nothing can be cached
def test_unwritable_cache_warns_and_the_check_still_answers(corpus: Path) -> None:
    cache = corpus / "cache"
    cache.mkdir()
    for kind in ("structures", "frozen_sets"):
        (cache / kind).write_text("a file where the cache folder must go")
    result = run(corpus, "recipes", "--check", "--cache-dir", str(cache))
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    assert "cannot write the structures cache" in result.stderr and "cannot write the frozen-sets cache" in result.stderr


def test_another_repository_checks_its_recipes_in_its_own_pytest_run(corpus: Path) -> None:
    (corpus / "pytest.ini").write_text("[pytest]\ntestpaths = recipes\nmmfreeze_recipes = recipes\n")
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(pytest_run, cwd=corpus, env=top_level_environment(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout
    write_recipe(corpus / "recipes" / "vlm" / "a.yaml", language=False)
    result = subprocess.run(pytest_run, cwd=corpus, env=top_level_environment(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "recipes/vlm/a.yaml: changed" in result.stdout, result.stdout


def test_unused_snapshots_of_the_repositorys_own_tests_are_left_to_syrupy(corpus: Path) -> None:
    (corpus / "pytest.ini").write_text("[pytest]\ntestpaths = tests recipes\nmmfreeze_recipes = recipes\n")
    (corpus / "tests" / "__snapshots__").mkdir(parents=True)
    (corpus / "tests" / "test_own.py").write_text("def test_kept(snapshot):\n    assert snapshot == 1\n")
    (corpus / "tests" / "__snapshots__" / "test_own.ambr").write_text(
        "# serializer version: 1\n# name: test_gone\n  2\n# ---\n# name: test_kept\n  1\n# ---\n"
    )
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(pytest_run, cwd=corpus, env=top_level_environment(), capture_output=True, text=True, timeout=300)
    assert "4 passed" in result.stdout and "1 snapshot unused" in result.stdout, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.slow  # two cold mmfreeze runs with build workers
def test_a_cold_run_shows_a_line_per_model_built_only_when_asked_under_ci(corpus: Path) -> None:
    quiet_ci = run(corpus, "recipes", "--check", "--cache-dir", str(corpus / "cache-a"))
    asked = run(corpus, "recipes", "--check", "--progress", "--cache-dir", str(corpus / "cache-b"))
    assert quiet_ci.returncode == asked.returncode == ExitCode.OK
    assert "built" not in quiet_ci.stderr
    # three recipes, one distinct model: one tick, with the model and the class it built
    assert asked.stderr.count("built ") == 1 and "(LlavaForConditionalGeneration) in " in asked.stderr and "[1/1]" in asked.stderr


def test_a_snapshot_that_names_another_framework_release_and_nothing_else_is_version_only(corpus: Path) -> None:
    """Issue 24, outcome 'version only': the same recipes snapshotted under the rules of 0.6, then
    checked under 0.7's (a repository that moved its declared release), freeze the same tensors."""
    settings = corpus / "pyproject.toml"
    settings.write_text('[tool.mmfreeze]\nframework = "0.6"\n')
    assert run(corpus, "recipes", "--update").returncode == ExitCode.OK
    settings.write_text('[tool.mmfreeze]\nframework = "0.7"\n')
    result = run(corpus, "recipes", "--check")
    assert result.returncode == ExitCode.VERSION_ONLY, result.stdout + result.stderr
    assert "recipes/vlm/a.yaml: version only (snapshots/recipes/vlm/a.yaml.frozen.txt)" in result.stdout
    assert "  framework: nemo-automodel 0.6 -> nemo-automodel 0.7" in result.stdout
    assert "newly" not in result.stdout
    assert "3 version only" in result.stderr


def test_a_release_change_beside_a_real_change_is_changed(corpus: Path) -> None:
    settings = corpus / "pyproject.toml"
    settings.write_text('[tool.mmfreeze]\nframework = "0.6"\n')
    assert run(corpus, "recipes", "--update").returncode == ExitCode.OK
    settings.write_text('[tool.mmfreeze]\nframework = "0.7"\n')
    write_recipe(corpus / "recipes" / "vlm" / "a.yaml", language=False)
    result = run(corpus, "recipes", "--check")
    assert result.returncode == ExitCode.CHANGED, result.stdout + result.stderr
    assert "recipes/vlm/a.yaml: changed" in result.stdout
    assert "recipes/vlm/b.yaml: version only" in result.stdout


def test_a_repositorys_own_pytest_run_fails_on_an_orphan_and_deletes_it_under_snapshot_update(corpus: Path) -> None:
    """The plugin is an adapter over the command's check: an orphan fails the run, listed in the
    terminal summary, and `--snapshot-update` deletes it (syrupy's own session no longer decides)."""
    (corpus / "pytest.ini").write_text("[pytest]\ntestpaths = recipes\nmmfreeze_recipes = recipes\n")
    (corpus / "recipes" / "other" / "c.yaml").unlink()
    orphan = corpus / "snapshots" / "recipes" / "other" / "c.yaml.frozen.txt"
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    failed = subprocess.run(pytest_run, cwd=corpus, env=top_level_environment(), capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and "2 passed" in failed.stdout, failed.stdout + failed.stderr
    assert ("mmfreeze: snapshots/recipes/other/c.yaml.frozen.txt: orphaned snapshot (recipe recipes/other/c.yaml is gone)"
            in failed.stdout) and orphan.is_file()
    updated = subprocess.run([*pytest_run, "--snapshot-update"], cwd=corpus, env=top_level_environment(),
                             capture_output=True, text=True, timeout=300)
    assert updated.returncode == 0 and "deleted snapshot" in updated.stdout, updated.stdout + updated.stderr
    assert not orphan.exists()
