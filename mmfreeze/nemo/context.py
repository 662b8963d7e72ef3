"""What the integration knows about the run it is installed in: the recipe and its choices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.distributed.native import native_support
from mmfreeze.exceptions import IntegrationError
from mmfreeze.recipes.layout import KEYS as LAYOUT_KEYS
from mmfreeze.recipes.multimodal import read_module_overrides
from mmfreeze.recipes.recipe import display_path, read_yaml
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.resolver.spec import MultimodalModuleSpec

SETTINGS_KEY = "mmfreeze"
"""The recipe's own switches for the integration: ``mmfreeze: {guard: false}``,
``mmfreeze: {gradients: true}``."""
GUARD_KEY = "guard"
GRADIENTS_KEY = "gradients"
"""Opt-in: the guard also checks, before the first step, that every trainable parameter got a gradient."""


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
    gradients: bool = False
    """The guard also checks that every trainable parameter received a gradient (``mmfreeze.gradients``)."""
    needs: frozenset[str] = frozenset()
    """What the recipe says that 0.7 cannot (``freeze``, ``rates``, ``distributed``): the framework
    functions the integration replaces (:data:`mmfreeze.nemo.installation.HOOK_GROUPS`)."""
    pipeline_stages: bool = False
    """``distributed.pp_size`` above 1: each model the guard sees is one stage."""

    @property
    def recipe_file(self) -> RecipeFile | None:
        return RecipeFile(self.recipe, self.source) if self.recipe is not None else None


def read_run_context(recipe: Path | None, *, guard: bool | None = None) -> RunContext:
    """The context of a run of ``recipe``; ``guard`` (when not ``None``) wins over the recipe's key."""
    if recipe is None:
        return RunContext(guard=guard is not False)
    return run_context(recipe, read_yaml(recipe, shown=display_path(recipe)), guard=guard)


def run_context(recipe: Path, document: Any, *, guard: bool | None = None) -> RunContext:
    """The context of a run of ``recipe``, whose YAML ``document`` the caller has read."""
    shown = display_path(recipe)
    if not isinstance(document, Mapping):
        raise IntegrationError("a recipe is a YAML mapping at the top level", source=shown)
    return RunContext(
        recipe=recipe,
        source=shown,
        override_specs=override_specs(read_module_overrides(document, source=shown)),
        guard=_setting(document, GUARD_KEY, True, shown) if guard is None else guard,
        gradients=_setting(document, GRADIENTS_KEY, False, shown),
        needs=_needs(document),
        pipeline_stages=_pp_size(document, shown) > 1,
    )


NEED_OF_KEY = {"freeze_config": "freeze", "optimizer": "rates", "distributed": "distributed"}
"""The first key of what :func:`native_support` says needs the integration -> the need it names."""


def _needs(document: Mapping[str, Any]) -> frozenset[str]:
    support = native_support(document)
    if support.verdict != "needs the integration":
        return frozenset()  # native, or rejected: the framework's own loader says why
    return frozenset(NEED_OF_KEY[key.split(".", 1)[0]] for key in support.keys)


def _pp_size(document: Mapping[str, Any], source: str) -> int:
    distributed = document.get("distributed")
    size = distributed.get("pp_size", 1) if isinstance(distributed, Mapping) else 1
    if size is None:
        return 1
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise IntegrationError(f"must be a positive integer, got {size!r}", source=source, key="distributed.pp_size")
    return size


def _setting(document: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    settings = document.get(SETTINGS_KEY) or {}
    if not isinstance(settings, Mapping) or not set(settings) <= set(LAYOUT_KEYS):
        raise IntegrationError(
            f"expected a mapping of {', '.join(f'`{name}`' for name in LAYOUT_KEYS)} (`{GUARD_KEY}` and "
            f"`{GRADIENTS_KEY}` each true or false), got {settings!r}", source=source, key=SETTINGS_KEY)
    value = settings.get(key, default)
    if not isinstance(value, bool):
        raise IntegrationError(f"must be true or false, got {value!r}", source=source, key=f"{SETTINGS_KEY}.{key}")
    return value
