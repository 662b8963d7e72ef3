"""A recipe's reviewed source and the sections compiled from it for the framework release.

The `(modality, role)` section a person writes and reviews lives under the top-level `mmfreeze:`
key, which nemo-automodel 0.7 ignores (``RecipeConfig`` delegates unknown top-level keys). Beside
it, `mmfreeze migrate` writes what the release runs natively::

    mmfreeze:
      freeze_config: {vision: {tower: true, projector: false}}     # the source
      param_group_overrides: [{role: vision.projector, lr_mult: 10.0}]
      compiled_for: nemo-automodel 0.7.0, transformers 5.18.0, framework builder
    freeze_config:                                                 # compiled: 0.7's own selectors
      freeze_modules: [{path: model.visual}]
      unfreeze_modules: [{path: model.visual.merger}]
    optimizer:
      param_group_overrides: [{pattern: '^model\\.visual\\.merger\\.', lr_mult: 10.0}]

mmfreeze reads such a recipe through its source (:func:`read_layout`): every frozen set, report
and proof is the source's, and `snapshot --check` holds the compiled sections to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import RecipeError

SECTION = "mmfreeze"
SOURCE_FREEZE = "freeze_config"
SOURCE_RATES = "param_group_overrides"
COMPILED_FOR = "compiled_for"
SWITCHES = ("guard", "gradients")
"""The integration's switches (:mod:`mmfreeze.nemo.context`), which share the section."""
KEYS = (SOURCE_FREEZE, SOURCE_RATES, COMPILED_FOR, *SWITCHES)


@dataclass(frozen=True, kw_only=True)
class CompiledSections:
    """What `mmfreeze migrate` compiled from the source, as the file holds it."""

    freeze_config: Any
    """The top-level `freeze_config` (0.7's selectors)."""
    param_group_overrides: Any = None
    """`optimizer.param_group_overrides` when the source has rates (``None`` otherwise)."""
    compiled_for: str = ""
    """The release, transformers and builder it was compiled and proven on."""


@dataclass(frozen=True, kw_only=True)
class RecipeLayout:
    """A recipe document as mmfreeze reads it, and the compiled sections it carries."""

    document: Mapping[str, Any]
    """The recipe with its source in place: `freeze_config` (and the optimizer's rates) are the source's."""
    compiled: CompiledSections | None = None
    """``None`` for a recipe whose `freeze_config` is itself what mmfreeze reads."""


def as_framework_reads(document: Mapping[str, Any], compiled: CompiledSections | None) -> Mapping[str, Any]:
    """``document`` (source in place) as the framework reads the file: the compiled sections in place."""
    if compiled is None:
        return document
    found = {**document, "freeze_config": compiled.freeze_config}
    if compiled.param_group_overrides is not None:
        found["optimizer"] = {**document["optimizer"], SOURCE_RATES: compiled.param_group_overrides}
    return found


def is_compiled_layout(document: Mapping[str, Any]) -> bool:
    """Whether ``document`` keeps its source under `mmfreeze:` (its `freeze_config` is compiled)."""
    settings = document.get(SECTION)
    return isinstance(settings, Mapping) and SOURCE_FREEZE in settings


def read_layout(document: Mapping[str, Any], *, source: str) -> RecipeLayout:
    """``document`` with the source of a compiled recipe in the place of what was compiled from it."""
    settings = document.get(SECTION)
    if settings is None or (isinstance(settings, Mapping) and SOURCE_FREEZE not in settings):
        return RecipeLayout(document=document)
    if not isinstance(settings, Mapping) or not set(settings) <= set(KEYS):
        unknown = sorted(set(settings) - set(KEYS)) if isinstance(settings, Mapping) else settings
        raise RecipeError(f"unknown key(s) {unknown!r}; valid keys: {', '.join(KEYS)}", source=source, key=SECTION)
    compiled_for = settings.get(COMPILED_FOR, "")
    if not isinstance(compiled_for, str):
        raise RecipeError(f"must be text such as 'nemo-automodel 0.7.0, transformers 5.18.0, framework builder', "
                          f"got {compiled_for!r}", source=source, key=f"{SECTION}.{COMPILED_FOR}")
    optimizer = document.get("optimizer")
    rates = settings.get(SOURCE_RATES)
    if rates is not None and not isinstance(optimizer, Mapping):
        raise RecipeError("has rates, but the recipe has no `optimizer:` section to compile them into",
                          source=source, key=f"{SECTION}.{SOURCE_RATES}")
    compiled = CompiledSections(
        freeze_config=document.get("freeze_config"),
        param_group_overrides=optimizer.get(SOURCE_RATES) if rates is not None else None,
        compiled_for=compiled_for,
    )
    effective = {**document, "freeze_config": settings[SOURCE_FREEZE]}
    if rates is not None:
        effective["optimizer"] = {**optimizer, SOURCE_RATES: rates}
    return RecipeLayout(document=effective, compiled=compiled)
