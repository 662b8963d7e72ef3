"""The recipe's optional top-level `multimodal.modules` list: identity overrides for the resolver.

```yaml
multimodal:
  modules:
    - path: model.connector.perceiver_resampler
      modality: vision
      role: resampler
      conditionally_executed: true
```

It is normally absent (model classes and the central table declare their modules); it exists for
third-party models and for correcting a wrong declaration. It lives outside `distributed:`
because freezing and activation checkpointing consume the same inventory.

Read here as validated plain data; the resolver turns it into its specs
(:func:`mmfreeze.resolver.overrides.override_specs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import RecipeError

_FIELDS = {"path": str, "modality": str, "role": (str, type(None)), "conditionally_executed": bool}
CONVENTIONAL_MODALITIES = ("vision", "audio", "video")
"""The modality names the table uses; a modality is an open string, so others are accepted."""


@dataclass(frozen=True, kw_only=True)
class ModuleOverride:
    """One `multimodal.modules` entry, validated, with the documented defaults filled in."""

    path: str
    """Canonical path of the submodule from the model root."""
    modality: str
    """Required: a module without one would be silently counted as some modality."""
    role: str | None = None
    conditionally_executed: bool = True


def read_module_overrides(document: Mapping[str, Any], *, source: str) -> tuple[ModuleOverride, ...]:
    """The overrides of a recipe (empty when it has no `multimodal:` section)."""
    section = document.get("multimodal")
    if section is None:
        return ()
    if not isinstance(section, Mapping) or set(section) - {"modules"}:
        raise RecipeError("must be a mapping with one key, `modules`", source=source, key="multimodal")
    modules = section.get("modules") or []
    if not isinstance(modules, list):
        raise RecipeError("must be a list of {path, modality, role, conditionally_executed}",
                          source=source, key="multimodal.modules")
    return tuple(_override(item, index, source) for index, item in enumerate(modules))


def _override(item: Any, index: int, source: str) -> ModuleOverride:
    key = f"multimodal.modules[{index}]"
    if not isinstance(item, Mapping) or "path" not in item:
        raise RecipeError(f"must be a mapping with at least `path`, got {item!r}", source=source, key=key)
    unknown = sorted(set(item) - set(_FIELDS))
    if unknown:
        raise RecipeError(f"unknown keys {unknown}; valid: {', '.join(_FIELDS)}", source=source, key=key)
    for name, value in item.items():
        if not isinstance(value, _FIELDS[name]):
            raise RecipeError(f"has the wrong type ({type(value).__name__}): {value!r}", source=source, key=f"{key}.{name}")
    if "modality" not in item:
        raise RecipeError(
            f"is missing; every module names its modality: {', '.join(CONVENTIONAL_MODALITIES)} "
            "or another modality name", source=source, key=f"{key}.modality",
        )
    return ModuleOverride(**item)
