"""What the integration knows about the run it is installed in: the recipe and its choices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.exceptions import IntegrationError
from mmfreeze.recipes.multimodal import read_module_overrides
from mmfreeze.recipes.recipe import display_path, read_yaml
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.resolver.spec import MultimodalModuleSpec

SETTINGS_KEY = "mmfreeze"
"""The recipe's own switches for the integration: ``mmfreeze: {guard: false}``."""
GUARD_KEY = "guard"


@dataclass(frozen=True)
class RecipeFile:
    """A recipe file and how messages name it (what the guard takes as a recipe)."""

    path: Path
    display_path: str


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """The recipe a run trains, as the integration needs it."""

    recipe: Path | None = None
    """The recipe file; the guard compares the run with its snapshot. ``None``: not known."""
    source: str = "freeze_config"
    """How messages name the recipe."""
    override_specs: tuple[MultimodalModuleSpec, ...] = ()
    """The recipe's `multimodal.modules` overrides, which its sections may address."""
    guard: bool = True
    """Run the guard before the first optimizer step (``mmfreeze.guard`` in the recipe turns it off)."""

    @property
    def recipe_file(self) -> RecipeFile | None:
        return RecipeFile(self.recipe, self.source) if self.recipe is not None else None


def read_run_context(recipe: Path | None, *, guard: bool | None = None) -> RunContext:
    """The context of a run of ``recipe``; ``guard`` (when not ``None``) wins over the recipe's key."""
    if recipe is None:
        return RunContext(guard=guard is not False)
    shown = display_path(recipe)
    document = read_yaml(recipe, shown=shown)
    if not isinstance(document, Mapping):
        raise IntegrationError("a recipe is a YAML mapping at the top level", source=shown)
    return RunContext(
        recipe=recipe,
        source=shown,
        override_specs=override_specs(read_module_overrides(document, source=shown)),
        guard=_guard_setting(document, shown) if guard is None else guard,
    )


def _guard_setting(document: Mapping[str, Any], source: str) -> bool:
    settings = document.get(SETTINGS_KEY) or {}
    if not isinstance(settings, Mapping) or not set(settings) <= {GUARD_KEY}:
        raise IntegrationError(
            f"expected a mapping with the one key `{GUARD_KEY}` (true or false), got {settings!r}",
            source=source, key=SETTINGS_KEY)
    value = settings.get(GUARD_KEY, True)
    if not isinstance(value, bool):
        raise IntegrationError(f"must be true or false, got {value!r}", source=source, key=f"{SETTINGS_KEY}.{GUARD_KEY}")
    return value
