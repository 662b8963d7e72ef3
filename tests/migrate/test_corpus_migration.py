"""The whole pre-migration corpus: every recipe migrates, only its blocks change, meaning is kept."""

from __future__ import annotations

import difflib
from dataclasses import replace

import pytest
from ruamel.yaml import YAML

from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.migrate.run import MigrateOptions, plan_files
from mmfreeze.migrate.yaml.text import key_position, key_span, load_roundtrip, split_lines
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.boundary.releases import CURRENT_RULES
from tests.conftest import EXAMPLE_CONFIGS, legacy_rules

pytestmark = pytest.mark.slow  # whole-corpus: migrates every pre-migration recipe

EDITABLE_KEYS = ("freeze_config", "distributed", "optimizer")


def _yaml(files, results):
    return [(path, result) for path, result in zip(files, results, strict=True) if path.suffix == ".yaml"]


def test_every_yaml_recipe_migrates(preserve_run):
    files, results = preserve_run
    statuses = {result.display: result.status for _, result in _yaml(files, results)}
    assert len(statuses) >= 60
    assert "skipped" not in statuses.values(), {k: v for k, v in statuses.items() if v == "skipped"}
    assert set(statuses.values()) <= {"preserved", "needs-escape-hatch", "no-freeze-config"}


def _editable_regions(text: str) -> list[tuple[int, int]]:
    document = load_roundtrip(text, source="test")
    lines = split_lines(text)
    return [key_span(lines, *key_position(document, key)) for key in EDITABLE_KEYS if key in document]


def test_outside_the_rewritten_blocks_every_byte_is_identical(preserve_run):
    """Every differing line range of the old text lies inside the freeze_config, distributed or optimizer block."""
    files, results = preserve_run
    for _, result in _yaml(files, results):
        regions = _editable_regions(result.old_text)
        old, new = split_lines(result.old_text), split_lines(result.new_text)
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag != "equal":
                assert any(start <= i1 and i2 <= end for start, end in regions), (result.display, tag, i1, i2)


def test_a_second_run_changes_nothing(preserve_run, workspace_of, tmp_path):
    files, results = preserve_run
    for path, result in zip(files, results, strict=True):
        target = tmp_path / path.name
        target.write_bytes(result.new_text.encode())
    workspace = workspace_of(tmp_path, framework=legacy_rules().release)
    again = plan_files(sorted(tmp_path.iterdir()), MigrateOptions(), workspace)
    assert [r.display for r in again if r.changed] == []


def test_preserve_mode_keeps_every_legacy_frozen_set_and_rate(preserve_run, structure_of):
    files, results = preserve_run
    yaml = YAML(typ="safe", pure=True)
    for path, result in _yaml(files, results):
        recipe = load_recipe(path, framework=legacy_rules())
        structure = structure_of(model_request(recipe))
        before = recipe_frozen_set(recipe, structure)
        after = recipe_frozen_set(replace(recipe, document=yaml.load(result.new_text), framework=CURRENT_RULES), structure)
        assert after.frozen == before.frozen, result.display
        assert after.rates == before.rates, result.display
        if result.status != "no-freeze-config":
            assert after.vocabulary == "new", result.display


def test_escape_hatch_entries_say_why(preserve_run):
    files, results = preserve_run
    hatches = [result for _, result in _yaml(files, results) if result.status == "needs-escape-hatch"]
    assert hatches
    for result in hatches:
        assert "modules:" in result.new_text and "also froze this" in result.new_text, result.display


def test_the_shipped_python_call_sites_are_what_migrate_makes_of_the_pre_migration_copy(preserve_run):
    """Only the two bound calls are rewritten (proven on their models); every other site keeps the
    legacy call and is reported."""
    files, results = preserve_run
    python = {path.name: result for path, result in zip(files, results, strict=True) if path.suffix == ".py"}
    for name, result in python.items():
        assert result.new_text == (EXAMPLE_CONFIGS / "python" / name).read_text(), name
    assert sum(result.new_text.count("apply_freeze_config(") for result in python.values()) == 2
    assert {name: [f.line for f in r.findings] for name, r in python.items()} == {
        "audio_finetune.py": [7, 19], "distill_vlm.py": [11], "finetune_vlm.py": [9, 12, 13], "freezing_param_cases.py": [17]}


def test_every_rewritten_recipe_is_counted_and_migrate_adds_no_distributed_addition(preserve_run):
    """Issue #21: the summary counts the rewritten recipes that now need mmfreeze's integration to
    train with nemo-automodel 0.7; the legacy distributed keys become the framework's own nested keys,
    never an mmfreeze addition (a recipe's additions after migration are the ones it had)."""
    from mmfreeze.distributed.native import split_framework_keys
    from mmfreeze.migrate.report import integration_summary

    files, results = preserve_run
    rewritten = [result for _, result in _yaml(files, results) if result.changed]
    assert all(result.nemo_automodel == "needs the integration" for result in rewritten)
    assert integration_summary(results).startswith(
        f"{len(rewritten)} of {len(rewritten)} rewritten recipes need mmfreeze's integration")
    for result in rewritten:
        before, after = (YAML(typ="safe").load(text) for text in (result.old_text, result.new_text))
        added = [split_framework_keys((document.get("distributed") or {}).get("multimodal") or {})[1]
                 for document in (before, after)]
        assert added[1] == added[0], result.display
