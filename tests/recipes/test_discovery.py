from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.discovery import find_recipes


def test_finds_yaml_recursively_and_skips_environments_and_vcs(tmp_path: Path) -> None:
    for relative in ["a.yaml", "sub/b.yml", ".git/c.yaml", ".venv/d.yaml", "env2/e.yaml", "notes.txt"]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("{}")
    (tmp_path / "env2" / "pyvenv.cfg").write_text("")
    assert [p.relative_to(tmp_path).as_posix() for p in find_recipes([tmp_path])] == ["a.yaml", "sub/b.yml"]


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="no such file"):
        find_recipes([tmp_path / "nope"])
