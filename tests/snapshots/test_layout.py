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
