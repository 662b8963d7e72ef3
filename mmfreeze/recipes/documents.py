"""Every YAML file of a run parsed once: discovery reads a file to decide whether it is a recipe,
and the loader builds the recipe from the same parsed document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.recipe import display_path, read_yaml


class YamlDocuments:
    """Parsed YAML (or the parse error) by absolute path, for one run. Messages name a file
    relative to ``root`` (the repository root) when given, else to the current directory."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root
        self._parsed: dict[Path, Any] = {}

    def read(self, path: Path) -> Any:
        """The file's document; a file that cannot be read or parsed raises the same
        :class:`RecipeError` every time it is asked for."""
        key = path.absolute()
        if key not in self._parsed:
            try:
                self._parsed[key] = read_yaml(path, shown=display_path(path, self.root))
            except RecipeError as error:
                self._parsed[key] = error
        found = self._parsed[key]
        if isinstance(found, RecipeError):
            raise found
        return found
