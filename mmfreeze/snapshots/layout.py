"""Where a recipe's snapshot lives: ``<snapshot dir>/<recipe path from the root>.frozen.txt``.

``example_configs/vlm/x.yaml`` -> ``snapshots/example_configs/vlm/x.yaml.frozen.txt``. The whole
file name, suffix included, is kept, so ``x.yaml`` and ``x.yml`` never share a snapshot, and the
mapping runs both ways (an orphan is a snapshot whose recipe path no longer exists).
"""

from __future__ import annotations

from pathlib import Path

from mmfreeze.exceptions import SnapshotError

SNAPSHOT_SUFFIX = ".frozen.txt"
DEFAULT_SNAPSHOT_DIR = "snapshots"


def recipe_key(recipe: Path, root: Path) -> str:
    """The recipe's path relative to ``root``, ``/``-separated: the name in headers and reports."""
    try:
        return recipe.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise SnapshotError(
            f"the recipe lies outside {root}; run from a folder that contains it", source=str(recipe)
        ) from None


def snapshot_path(recipe: Path, root: Path, snapshot_dir: Path) -> Path:
    return snapshot_dir / (recipe_key(recipe, root) + SNAPSHOT_SUFFIX)


def recipe_path(snapshot: Path, root: Path, snapshot_dir: Path) -> Path:
    """Inverse of :func:`snapshot_path`."""
    relative = snapshot.resolve().relative_to(snapshot_dir.resolve()).as_posix()
    return root / relative.removesuffix(SNAPSHOT_SUFFIX)


def scope_dir(recipes_dir: Path, root: Path, snapshot_dir: Path) -> Path:
    """The snapshot folder mirroring a recipe folder: where that folder's orphans are looked for."""
    key = recipe_key(recipes_dir, root)
    return snapshot_dir if key == "." else snapshot_dir / key
