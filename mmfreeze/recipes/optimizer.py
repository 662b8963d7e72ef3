"""Where a recipe's optimizer decides parameter groups: ``optimizer.param_group_overrides`` (pure).

The section is parsed and checked in the freeze layer (:mod:`mmfreeze.freeze.optimizer`), since an
entry may name its tensors with the `(modality, role)` vocabulary's selectors; what a cached
frozen set depends on is read here, from the document alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SECTION = "optimizer"
OVERRIDES = "param_group_overrides"
SCHEDULER = "lr_scheduler"
"""The section whose scheduler applies ``lr_mult`` / ``wd_mult``: without it nothing does."""

Rate = tuple[float, float]
"""``(lr_mult, wd_mult)`` of a tensor's optimizer group."""
DEFAULT_RATE: Rate = (1.0, 1.0)
"""The default group's: the optimizer's own learning rate and weight decay."""


def grouping_material(document: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the optimizer section that decides the groups: what a cached result depends on."""
    section = document.get(SECTION)
    if not isinstance(section, Mapping):
        return {}
    return {**{key: section.get(key) for key in ("_target_", OVERRIDES)}, SCHEDULER: bool(document.get(SCHEDULER))}
