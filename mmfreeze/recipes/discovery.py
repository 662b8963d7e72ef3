"""Find the files under the paths a user names, and decide which of them are recipes.

One rule, used by every command and by the pytest plugin (:meth:`RecipeFinder.classify`): a
recipe is a YAML file whose top level is a mapping with a ``model:`` key, and that no
``[tool.mmfreeze] exclude`` glob matches. Other YAML files (data, dataset lists, CI files) are
skipped and counted. A YAML file that does not parse counts as a recipe: it may be a broken one,
and its parse error is reported like any input error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from mmfreeze.counts import plural
from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import relative_path

RECIPE_SUFFIXES = (".yaml", ".yml")
# Folders that never hold recipes a user means: VCS data, environments, build output, caches.
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".venv", "venv", "env", ".tox", ".nox", "node_modules", "build", "dist",
     "__pycache__", ".mypy_cache", ".pytest_cache", ".mmfreeze-cache", "site-packages"}
)

FileKind = Literal["recipe", "not-a-recipe", "excluded", "other"]
"""``not-a-recipe``: YAML without a top-level ``model:`` key; ``other``: not YAML at all."""


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


def is_recipe_document(document: Any) -> bool:
    """The rule: a YAML mapping with a top-level ``model:`` key."""
    return isinstance(document, Mapping) and "model" in document


@dataclass(frozen=True, kw_only=True)
class Discovery:
    """What discovery found under some paths, each list sorted."""

    recipes: tuple[Path, ...] = ()
    not_recipes: tuple[Path, ...] = ()
    """YAML files without a ``model:`` section: skipped."""
    excluded: tuple[Path, ...] = ()
    """Recipes an ``exclude`` glob matches: skipped."""

    def under(self, path: Path) -> Discovery:
        """What was found at or below ``path``."""
        top = path.absolute()  # the files were found by walking the paths as given: no need to resolve

        def keep(found: tuple[Path, ...]) -> tuple[Path, ...]:
            return tuple(p for p in found if p.absolute().is_relative_to(top))

        return Discovery(recipes=keep(self.recipes), not_recipes=keep(self.not_recipes), excluded=keep(self.excluded))

    def why_no_recipe(self) -> str:
        """Completes "PATH ...": why a path without recipes has none."""
        if not self.not_recipes and not self.excluded:
            return "holds no YAML recipe (*.yaml, *.yml)"
        reasons = [f"{plural(len(self.not_recipes), 'YAML file')} without a top-level `model:` section"] * bool(self.not_recipes)
        reasons += [f"{plural(len(self.excluded), 'recipe')} excluded by [tool.mmfreeze] exclude"] * bool(self.excluded)
        return "holds no recipe: " + ", ".join(reasons)


@dataclass(frozen=True, kw_only=True)
class RecipeFinder:
    """The recipe rule for one run: the repository root the ``exclude`` globs are relative to,
    and the run's parsed YAML (each file is parsed once however often it is asked about)."""

    root: Path
    exclude: tuple[str, ...] = ()
    documents: YamlDocuments = field(default_factory=YamlDocuments)

    @cached_property
    def _exclude_patterns(self) -> tuple[PathGlob, ...]:
        return tuple(glob_pattern(glob) for glob in self.exclude)

    def is_excluded(self, path: Path) -> bool:
        if not self.exclude:
            return False
        relative = relative_path(path, self.root)
        if relative is None:
            return False
        candidates = [relative.as_posix(), *(parent.as_posix() for parent in relative.parents if parent.parts)]
        return any(pattern.fullmatch(text) for pattern in self._exclude_patterns for text in candidates)

    def classify(self, path: Path) -> FileKind:
        if path.suffix not in RECIPE_SUFFIXES:
            return "other"
        if self.is_excluded(path):
            return "excluded"
        try:
            document = self.documents.read(path)
        except RecipeError:
            return "recipe"  # a broken recipe, reported when it is loaded
        return "recipe" if is_recipe_document(document) else "not-a-recipe"

    def is_recipe(self, path: Path) -> bool:
        return self.classify(path) == "recipe"

    def discover(self, paths: Sequence[Path]) -> Discovery:
        """Every YAML file under ``paths``, sorted into recipes, non-recipes and exclusions."""
        found: dict[FileKind, list[Path]] = {"recipe": [], "not-a-recipe": [], "excluded": [], "other": []}
        for path in iter_files(paths, RECIPE_SUFFIXES):
            found[self.classify(path)].append(path)
        return Discovery(
            recipes=tuple(found["recipe"]), not_recipes=tuple(found["not-a-recipe"]), excluded=tuple(found["excluded"])
        )


@dataclass(frozen=True)
class PathGlob:
    """A ``/``-separated path glob: ``*`` and ``?`` stay inside one folder name, ``[...]`` is a
    character class, ``**`` spans any number of folders (as the last part: anything below).

    Matched folder by folder over a set of positions in the glob, so a path costs at most
    (its folders) x (the glob's parts) steps, whatever the ``**``: a regular expression of nested
    ``(?:[^/]+/)*`` took minutes on a glob of many ``**`` against a deep tree."""

    parts: tuple[re.Pattern[str] | None, ...]
    """One pattern per folder name; ``None`` for ``**``."""

    def fullmatch(self, path: str) -> bool:
        last = len(self.parts) - 1
        states = self._closure({0})
        for name in path.split("/"):
            if last in states and self.parts[last] is None:
                return True  # a last `**` takes the rest of the path, whatever it is
            # a `**` takes one more non-empty folder name and stays; any other part takes a name it matches
            states = self._closure({index + (part is not None) for index in states if index <= last
                                    for part in (self.parts[index],)
                                    if (part is None and name) or (part is not None and part.fullmatch(name))})
            if not states:
                return False
        return last + 1 in states

    def _closure(self, states: set[int]) -> set[int]:
        """``states`` and the positions after each `**` that is not last (it may span no folder)."""
        found, pending = set(states), list(states)
        while pending:
            index = pending.pop()
            if index < len(self.parts) - 1 and self.parts[index] is None and index + 1 not in found:
                found.add(index + 1)
                pending.append(index + 1)
        return found


def glob_pattern(glob: str) -> PathGlob:
    """``glob`` (relative to the repository root, ``/``-separated) as a :class:`PathGlob`."""
    return PathGlob(tuple(None if part == "**" else re.compile(_segment_pattern(part))
                          for part in glob.strip("/").split("/")))


def _segment_pattern(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", index + 2)) != -1:
            body = segment[index + 1 : end]
            negate = body.startswith("!")
            out.append("[" + ("^" if negate else "") + (body[1:] if negate else body).replace("\\", "\\\\") + "]")
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)
