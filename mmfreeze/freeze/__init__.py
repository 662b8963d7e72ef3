"""Freezing: the legacy engine reproduced exactly, and the new (modality, role) engine.

Both act on a live model (meta or real) after PEFT injection and return what they froze; the
pure planners (`plan_legacy_freeze`, `plan_new_freeze`) do the same on a model structure.
"""

from mmfreeze.freeze.apply import FreezeResult, apply_freeze_config, apply_legacy_freeze_config
from mmfreeze.freeze.config import FreezeConfig, parse_freeze_config
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.new import plan_new_freeze

__all__ = [
    "FreezeConfig",
    "FreezeResult",
    "apply_freeze_config",
    "apply_legacy_freeze_config",
    "parse_freeze_config",
    "plan_legacy_freeze",
    "plan_new_freeze",
]
