"""Which accepted snapshot a run is held against, and reading it.

By default it is the file `mmfreeze snapshot` compares the recipe with, from whatever folder:
``<snapshot folder>/<recipe path from the repository root>.frozen.txt``, where the repository root
and the snapshot folder (``[tool.mmfreeze] snapshots``, default ``snapshots``) come from
:func:`mmfreeze.settings.find_settings` (:func:`mmfreeze.snapshots.layout.snapshot_path`).
``snapshot=`` names the file instead.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Protocol, TypeAlias

from mmfreeze.exceptions import SnapshotError
from mmfreeze.snapshots.format import Snapshot, check_counts, parse_snapshot
from mmfreeze.settings import find_settings
from mmfreeze.snapshots.layout import snapshot_path
from mmfreeze.snapshots.store import read_snapshot_text


class RecipeLike(Protocol):
    """A parsed recipe (:class:`mmfreeze.recipes.recipe.Recipe`): only its file is read here."""

    @property
    def path(self) -> Path: ...


RecipeRef: TypeAlias = str | os.PathLike[str] | RecipeLike
"""A recipe file path, or a parsed recipe (never parsed again: the snapshot says everything)."""


def recipe_file(recipe: RecipeRef) -> Path:
    path = getattr(recipe, "path", recipe)
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"recipe= takes a recipe file path or a parsed Recipe, not {type(recipe).__name__}")
    return Path(path)


def recipe_label(recipe: RecipeRef) -> str:
    """How messages name the recipe: a parsed recipe's display path, else the path as given."""
    return str(getattr(recipe, "display_path", None) or recipe_file(recipe))


def find_snapshot(recipe: Path, snapshot: str | os.PathLike[str] | None) -> Path:
    """``snapshot`` when given, else the file `mmfreeze snapshot RECIPE` compares with (relative to
    the working directory when it lies below it)."""
    if snapshot is not None:
        return Path(snapshot)
    settings = find_settings([recipe])
    found = snapshot_path(recipe, settings.root, settings.snapshots)
    cwd = Path.cwd().resolve()
    return found.relative_to(cwd) if found.is_relative_to(cwd) else found


def read_snapshot(path: Path, *, recipe: Path) -> Snapshot:
    """The accepted snapshot at ``path``; it must exist, parse, and be the snapshot of a file named like ``recipe``."""
    try:
        text = read_snapshot_text(path)
    except FileNotFoundError:
        raise SnapshotError(
            f"no accepted snapshot at {path}; run `mmfreeze snapshot --update {recipe}` and review it, "
            "or pass snapshot= with its path",
            source=str(recipe),
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise SnapshotError(f"cannot read the snapshot {path}: {error}", source=str(recipe)) from error
    stored = parse_snapshot(text, source=str(path))
    check_counts(stored, source=str(path))
    if PurePosixPath(stored.header.recipe).name != recipe.name:
        raise SnapshotError(
            f"{path} is the snapshot of {stored.header.recipe}, not of this recipe; pass the snapshot of {recipe}",
            source=str(recipe),
        )
    return stored
