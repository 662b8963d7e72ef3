"""`mmfreeze migrate` through click: --check, --diff, --report, --disable, --strict, failures per file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import cli

FIXTURES = Path(__file__).resolve().parents[1] / "migrate" / "fixtures" / "pre_migration"
RECIPE = FIXTURES / "vlm_finetune" / "llava" / "llava_1_5_cauldron_sweep.yaml"
PYTHON = FIXTURES / "python" / "distill_vlm.py"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """Two files of the pre-migration corpus, in a repository that, like it, declares nemo-automodel 0.6."""
    shutil.copy(FIXTURES / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(RECIPE, tmp_path / RECIPE.name)
    shutil.copy(PYTHON, tmp_path / PYTHON.name)
    return tmp_path


def _run(*args: str):
    return CliRunner().invoke(cli, ["migrate", *args, "--no-cache"])


def test_check_exits_1_and_writes_nothing(work):
    before = (work / RECIPE.name).read_text()
    result = _run(str(work), "--check")
    assert result.exit_code == 1, result.output
    assert (work / RECIPE.name).read_text() == before


def test_diff_prints_a_unified_diff_and_writes_nothing(work):
    result = _run(str(work), "--diff")
    assert "-  freeze_vision_tower: true" in result.output and "+  vision: {tower: true" in result.output
    assert "freeze_vision_tower" in (work / RECIPE.name).read_text()


def test_a_run_writes_then_a_second_check_is_clean(work):
    assert _run(str(work)).exit_code == 0
    assert "vision: {tower: true, projector: false}" in (work / RECIPE.name).read_text()
    assert _run(str(work), "--check").exit_code == 0


def test_json_report_lists_status_rules_and_unrewritten_python_sites(work):
    report = json.loads(_run(str(work), "--check", "--report", "json").stdout)
    files = {Path(f["file"]).name: f for f in report["files"]}
    assert files[RECIPE.name]["status"] == "preserved" and files[RECIPE.name]["rules"] == ["MF001"]
    assert files[PYTHON.name]["findings"][0]["line"] == 11


def test_strict_makes_an_unrewritten_python_site_an_error(work):
    assert _run(str(work / PYTHON.name), "--strict").exit_code == 3


def test_disable_skips_a_rule_and_an_unknown_rule_is_a_usage_error(work):
    assert _run(str(work), "--check", "--disable", "freeze-config-vocabulary").exit_code == 0
    result = _run(str(work), "--disable", "MF999")
    assert result.exit_code == 2 and "MF001 (freeze-config-vocabulary)" in result.output


def test_an_unparseable_file_is_reported_with_its_line_and_the_rest_still_migrates(work):
    (work / "broken.yaml").write_text("a: 1\nfreeze_config: [\n")
    result = _run(str(work))
    assert result.exit_code == 3
    assert "broken.yaml:" in result.output
    assert "vision:" in (work / RECIPE.name).read_text()


SELECTORS = Path(__file__).resolve().parents[1] / "migrate" / "fixtures" / "selectors"


def test_a_selector_recipe_is_rewritten_and_a_misspelt_key_is_an_input_error_naming_file_and_line(tmp_path):
    shutil.copy(SELECTORS / "qwen2_vl_2b_merger_trains.yaml", tmp_path / "good.yaml")
    text = (SELECTORS / "qwen2_vl_2b_merger_trains.yaml").read_text()
    (tmp_path / "typo.yaml").write_text(text.split("freeze_config:")[0] + "freeze_config:\n  freeze_vison_tower: false\n")
    result = _run(str(tmp_path), "--report", "json")
    assert result.exit_code == 3
    files = {Path(f["file"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["good.yaml"]["status"] == "preserved"
    assert "typo.yaml:12: freeze_config.freeze_vison_tower: unknown key (did you mean 'freeze_vision_tower'?)" in files["typo.yaml"]["error"]
    assert "vision: {tower: true, projector: false}" in (tmp_path / "good.yaml").read_text()
    assert "freeze_vison_tower" in (tmp_path / "typo.yaml").read_text()


def test_bound_python_calls_are_rewritten_and_unbound_ones_reported_by_line(tmp_path):
    shutil.copytree(SELECTORS, tmp_path / "selectors")
    calls = tmp_path / "selectors" / "python" / "selector_calls.py"
    report = json.loads(_run(str(calls), "--report", "json").stdout)
    [entry] = report["files"]
    assert entry["status"] == "python-rewritten" and entry["rules"] == ["MF101"]
    # line 30: the Gemma4 E2B call the framework's invariant freezes would change (test_selector_corpus)
    assert [(f["line"], f["rule"]) for f in entry["findings"]] == [(30, "MF101"), (48, "MF101"), (52, "MF101")]
    assert calls.read_text().count("apply_freeze_config(") == 4
    assert _run(str(calls), "--check").exit_code == 0


def test_the_summary_counts_excluded_files_and_a_compiled_section_written_again_says_recompiled(tmp_path: Path,
                                                                                              monkeypatch) -> None:
    """Issue 48 item 7: the summary left excluded files out, and a recompile read "preserved, rewritten"."""
    (tmp_path / "pyproject.toml").write_text('[tool.mmfreeze]\nframework = "0.7"\nexclude = ["recipes/drafts/**"]\n')
    (tmp_path / "recipes" / "drafts").mkdir(parents=True)
    shutil.copy(RECIPE, tmp_path / "recipes" / "a.yaml")
    shutil.copy(RECIPE, tmp_path / "recipes" / "drafts" / "b.yaml")
    monkeypatch.chdir(tmp_path)
    first = _run("recipes")
    assert first.exit_code == 0, first.output
    assert "1 files: 1 preserved; 1 excluded by [tool.mmfreeze] exclude" in first.output
    recipe = tmp_path / "recipes" / "a.yaml"
    compiled = "    - {path: model.vision_tower}\n"
    assert recipe.read_text().count(compiled) == 1
    recipe.write_text(recipe.read_text().replace(compiled, "    - {path: model.vision_tower.vision_model}\n"))
    again = _run("recipes")
    assert again.exit_code == 0, again.output
    assert "recipes/a.yaml: recompiled, rewritten" in again.output and "1 files: 1 recompiled" in again.output
    assert "preserved" not in again.output
