"""Freezing: the legacy engine reproduced exactly, and the new (modality, role) engine.

Both act on a live model (meta or real) after PEFT injection and return what they froze; the
pure planners (`plan_legacy_freeze`, `plan_new_freeze`) do the same on a model structure. The new
vocabulary (role flags, `language_model`, `modules` selectors: paths, globs, layer ranges, and
`except`) is parsed and checked in one place, :mod:`mmfreeze.freeze.config`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mmfreeze.freeze.apply import FreezeResult, apply_freeze_config, apply_legacy_freeze_config
    from mmfreeze.freeze.config import FreezeConfig, LayerRange, parse_freeze_config
    from mmfreeze.freeze.legacy import plan_legacy_freeze
    from mmfreeze.freeze.new import plan_new_freeze

# Imported on first use: a warm snapshot run imports `freeze.recipe_model` (recipe -> model
# request) and must not pay for the resolver's tables through this package's exports.
_EXPORTS = {
    "mmfreeze.freeze.apply": ("FreezeResult", "apply_freeze_config", "apply_legacy_freeze_config"),
    "mmfreeze.freeze.config": ("FreezeConfig", "LayerRange", "parse_freeze_config"),
    "mmfreeze.freeze.legacy": ("plan_legacy_freeze",),
    "mmfreeze.freeze.new": ("plan_new_freeze",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
