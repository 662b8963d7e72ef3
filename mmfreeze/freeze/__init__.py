"""Freezing: the legacy engine reproduced exactly, and the new (modality, role) engine.

Both act on a live model (meta or real) after PEFT injection and return what they froze; the
pure planners (`plan_legacy_freeze`, `plan_new_freeze`) do the same on a model structure. The new
vocabulary (role flags, `language_model`, `modules` selectors: paths, globs, layer ranges, and
`except`) is parsed and checked in one place, :mod:`mmfreeze.freeze.config`.
"""

from mmfreeze.freeze.apply import FreezeResult, apply_freeze_config, apply_legacy_freeze_config
from mmfreeze.freeze.config import FreezeConfig, LayerRange, parse_freeze_config
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.new import plan_new_freeze

__all__ = [
    "FreezeConfig",
    "FreezeResult",
    "LayerRange",
    "apply_freeze_config",
    "apply_legacy_freeze_config",
    "parse_freeze_config",
    "plan_legacy_freeze",
    "plan_new_freeze",
]
