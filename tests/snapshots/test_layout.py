from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.exceptions import SnapshotError
from mmfreeze.snapshots.layout import recipe_path, scope_dir, snapshot_path


def test_snapshot_path_mirrors_the_recipe_path_and_keeps_its_suffix(tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    yaml = snapshot_path(tmp_path / "cfg" / "vlm" / "x.yaml", tmp_path, snapshots)
    yml = snapshot_path(tmp_path / "cfg" / "vlm" / "x.yml", tmp_path, snapshots)
    assert yaml == snapshots / "cfg" / "vlm" / "x.yaml.frozen.txt"
    assert yaml != yml
    assert recipe_path(yaml, tmp_path, snapshots) == tmp_path / "cfg" / "vlm" / "x.yaml"


def test_scope_of_the_root_folder_is_the_whole_snapshot_folder(tmp_path: Path) -> None:
    assert scope_dir(tmp_path, tmp_path, tmp_path / "s") == tmp_path / "s"
    assert scope_dir(tmp_path / "cfg", tmp_path, tmp_path / "s") == tmp_path / "s" / "cfg"


def test_recipe_outside_the_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="outside"):
        snapshot_path(Path("/elsewhere/x.yaml"), tmp_path, tmp_path / "s")


def test_a_plain_path_through_dotdot_outside_the_root_is_not_called_a_symbolic_link(tmp_path: Path) -> None:
    """Issue 48: `../outside/a.yaml` was reported as resolving "through a symbolic link"."""
    from mmfreeze.snapshots.layout import recipe_key

    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.yaml").write_text("model: {}\n")
    with pytest.raises(SnapshotError, match="the recipe lies outside") as raised:
        recipe_key(root / "recipes" / ".." / ".." / "outside" / "a.yaml", root)
    assert "symbolic link" not in raised.value.message
    (root / "linked.yaml").symlink_to(tmp_path / "outside" / "a.yaml")
    with pytest.raises(SnapshotError, match="resolves through a symbolic link to"):
        recipe_key(root / "linked.yaml", root)
