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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmfreeze.exceptions import RecipeError
from mmfreeze.resolver.spec import MultimodalModuleSpec

_FIELDS = {"path": str, "modality": str, "role": (str, type(None)), "conditionally_executed": bool}


def parse_module_overrides(document: Mapping[str, Any], *, source: str) -> tuple[MultimodalModuleSpec, ...]:
    """The override specs of a recipe (empty when it has no `multimodal:` section)."""
    section = document.get("multimodal")
    if section is None:
        return ()
    if not isinstance(section, Mapping) or set(section) - {"modules"}:
        raise RecipeError("must be a mapping with one key, `modules`", source=source, key="multimodal")
    modules = section.get("modules") or []
    if not isinstance(modules, list):
        raise RecipeError("must be a list of {path, modality, role, conditionally_executed}",
                          source=source, key="multimodal.modules")
    return tuple(_spec(item, index, source) for index, item in enumerate(modules))


def _spec(item: Any, index: int, source: str) -> MultimodalModuleSpec:
    key = f"multimodal.modules[{index}]"
    if not isinstance(item, Mapping) or "path" not in item:
        raise RecipeError(f"must be a mapping with at least `path`, got {item!r}", source=source, key=key)
    unknown = sorted(set(item) - set(_FIELDS))
    if unknown:
        raise RecipeError(f"unknown keys {unknown}; valid: {', '.join(_FIELDS)}", source=source, key=key)
    for name, value in item.items():
        if not isinstance(value, _FIELDS[name]):
            raise RecipeError(f"has the wrong type ({type(value).__name__}): {value!r}", source=source, key=f"{key}.{name}")
    return MultimodalModuleSpec(**item)
