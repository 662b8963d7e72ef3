"""Freezing: the legacy engine reproduced exactly, and the new (modality, role) engine.

Both act on a live model (meta or real) after PEFT injection and return what they froze; the
pure planners (`plan_legacy_freeze`, `plan_new_freeze`) do the same on a model structure. The new
vocabulary (role flags, `language_model`, `modules` selectors: paths, globs, layer ranges, and
`except`) is parsed and checked in one place, :mod:`mmfreeze.freeze.config`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmfreeze.freeze.apply import FreezeResult, apply_freeze_config, apply_legacy_freeze_config
    from mmfreeze.freeze.config import FreezeConfig, LayerRange, parse_freeze_config
    from mmfreeze.freeze.legacy import plan_legacy_freeze
    from mmfreeze.freeze.new import plan_new_freeze

# Imported on first use: a warm snapshot run imports `freeze.recipe_model` (recipe -> model
# request) and must not pay for the resolver's tables through this package's exports.
_EXPORTS = {
    "FreezeConfig": "mmfreeze.freeze.config",
    "FreezeResult": "mmfreeze.freeze.apply",
    "LayerRange": "mmfreeze.freeze.config",
    "apply_freeze_config": "mmfreeze.freeze.apply",
    "apply_legacy_freeze_config": "mmfreeze.freeze.apply",
    "parse_freeze_config": "mmfreeze.freeze.config",
    "plan_legacy_freeze": "mmfreeze.freeze.legacy",
    "plan_new_freeze": "mmfreeze.freeze.new",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mmfreeze.freeze' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
