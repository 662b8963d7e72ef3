"""Where a recipe's snapshot lives: ``<snapshot dir>/<recipe path from the root>.frozen.txt``.

``example_configs/vlm/x.yaml`` -> ``snapshots/example_configs/vlm/x.yaml.frozen.txt``. The whole
file name, suffix included, is kept, so ``x.yaml`` and ``x.yml`` never share a snapshot, and the
mapping runs both ways (an orphan is a snapshot whose recipe path no longer exists).
"""

from __future__ import annotations

import os
from pathlib import Path

from mmfreeze.exceptions import SnapshotError

SNAPSHOT_SUFFIX = ".frozen.txt"
DEFAULT_SNAPSHOT_DIR = "snapshots"


def recipe_key(recipe: Path, root: Path) -> str:
    """The recipe's path relative to ``root``, ``/``-separated: the name in headers and reports.

    Symbolic links are followed: a recipe that resolves outside ``root`` (a link to a file
    elsewhere, or a path through a linked folder) is a :class:`SnapshotError` naming the path as
    given, never dropped."""
    resolved = recipe.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise SnapshotError(_outside_message(recipe, resolved, root), source=str(recipe)) from None


def link_key(recipe: Path, root: Path) -> str:
    """The recipe's path relative to ``root`` as given, links not followed: how a recipe that
    :func:`recipe_key` refuses is named in a report."""
    absolute = recipe.absolute()
    return absolute.relative_to(root.absolute()).as_posix() if absolute.is_relative_to(root.absolute()) else str(recipe)


def _outside_message(recipe: Path, resolved: Path, root: Path) -> str:
    if resolved == Path(os.path.abspath(recipe)):  # no link on the way (`..` is not one)
        return f"the recipe lies outside {root}; run from a folder that contains it"
    return (f"resolves through a symbolic link to {resolved}, outside the repository {root}: a recipe must lie "
            "inside the repository whose snapshots check it; copy the file in, or check it in its own repository")


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
