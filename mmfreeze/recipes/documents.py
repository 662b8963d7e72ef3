"""Every YAML file of a run parsed once: discovery reads a file to decide whether it is a recipe,
and the loader builds the recipe from the same parsed document. A run that rewrites files
(`mmfreeze migrate`) keeps each file's text and round-trip parse as well (:meth:`YamlDocuments.file`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmfreeze.exceptions import RecipeError
from mmfreeze.memo import memoized
from mmfreeze.recipes.recipe import display_path, read_exact_text, read_yaml
from mmfreeze.recipes.roundtrip import YamlFile, parse_roundtrip


class YamlDocuments:
    """Parsed YAML (or the parse error) by absolute path, for one run. Messages name a file
    relative to ``root`` (the repository root) when given, else to the current directory.
    ``roundtrip``: parse each file once with comments and positions (slower; for rewriting)."""

    def __init__(self, root: Path | None = None, *, roundtrip: bool = False) -> None:
        self.root = root
        self.roundtrip = roundtrip
        self._parsed: dict[Path, Any] = {}

    def read(self, path: Path) -> Any:
        """The file's document; a file that cannot be read or parsed raises the same
        :class:`RecipeError` every time it is asked for."""
        found = self._load(path)
        return found.data if isinstance(found, YamlFile) else found

    def file(self, path: Path) -> YamlFile:
        """The file's text, round-trip parse and data (a ``roundtrip`` run only)."""
        if not self.roundtrip:
            raise ValueError("YamlDocuments.file needs a roundtrip run")
        return self._load(path)

    def _load(self, path: Path) -> Any:
        return memoized(self._parsed, path.absolute(), lambda: self._parse(path), errors=(RecipeError,))

    def _parse(self, path: Path) -> Any:
        shown = display_path(path, self.root)
        if self.roundtrip:
            return parse_roundtrip(read_exact_text(path, shown=shown), source=shown)
        return read_yaml(path, shown=shown)
