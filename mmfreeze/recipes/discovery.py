"""Find the files under the paths a user names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from mmfreeze.exceptions import RecipeError

RECIPE_SUFFIXES = (".yaml", ".yml")
# Folders that never hold recipes a user means: VCS data, environments, build output, caches.
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".venv", "venv", "env", ".tox", ".nox", "node_modules", "build", "dist",
     "__pycache__", ".mypy_cache", ".pytest_cache", ".mmfreeze-cache", "site-packages"}
)


def iter_files(paths: Iterable[Path], suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Files with one of ``suffixes`` under ``paths`` (files named directly are kept), sorted."""
    found: set[Path] = set()
    for path in paths:
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            found.update(_walk(path, suffixes))
        else:
            raise RecipeError("no such file or directory", source=str(path))
    yield from sorted(found)


def _walk(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    for child in sorted(root.iterdir()):
        if child.is_dir():
            if child.name not in SKIPPED_DIRS and not (child / "pyvenv.cfg").exists():
                yield from _walk(child, suffixes)
        elif child.suffix in suffixes:
            yield child


def find_recipes(paths: Iterable[Path]) -> list[Path]:
    """Every YAML recipe under ``paths``."""
    return list(iter_files(paths, RECIPE_SUFFIXES))
