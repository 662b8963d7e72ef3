"""Migrate parses a file once and verifies it once (issue 47): counting ruamel's YAML parser
constructions while `mmfreeze migrate` rewrites one legacy public recipe (MF001, then MF006's
compile for nemo-automodel 0.7) in a fresh repository. Before the rules planned their edits on one
parse, the same file took 9.

The count wraps the real ``YAML.__init__`` (every construction still happens): instrumentation,
not a stand-in.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from mmfreeze.cli.main import cli
from tests.conftest import REPO_ROOT

LEGACY = REPO_ROOT / "tests/migrate/fixtures/pre_migration/vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2.yaml"


def test_migrating_a_legacy_recipe_constructs_the_yaml_parser_twice_read_and_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.mmfreeze]\nframework = "0.7"\n')
    recipe = tmp_path / "recipes" / "qwen2_5_vl_7b_cord_v2.yaml"
    recipe.parent.mkdir()
    shutil.copy(LEGACY, recipe)
    constructed = []
    construct = YAML.__init__

    def counted(self: YAML, *args: object, **kwargs: object) -> None:
        constructed.append(kwargs.get("typ"))
        construct(self, *args, **kwargs)

    monkeypatch.setattr(YAML, "__init__", counted)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["migrate", "--report", "json", "recipes"])
    monkeypatch.undo()

    assert result.exit_code == 0, result.output
    assert '"rules": [\n        "MF001",\n        "MF006"\n      ]' in result.output, result.output
    assert "mmfreeze:" in recipe.read_text() and recipe.read_text() != LEGACY.read_text()
    assert len(constructed) <= 2, constructed
