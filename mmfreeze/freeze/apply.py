"""Apply freezing plans to live models (meta or real). The only place `requires_grad` is written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.plan import FreezePlan
from mmfreeze.models.structure import structure_of

if TYPE_CHECKING:
    from torch import nn


def apply_freeze_plan(model: nn.Module, plan: FreezePlan) -> None:
    """Set ``requires_grad=False`` on every parameter the plan names; never sets it to True."""
    parameters = dict(model.named_parameters(remove_duplicate=False))
    for name in plan.frozen:
        parameters[name].requires_grad_(False)


def apply_legacy_freeze_config(model: nn.Module, freeze_config: Mapping[str, Any] | None) -> FreezePlan:
    """Run the legacy engine on ``model`` (after LoRA injection, as training did); return what it froze."""
    plan = plan_legacy_freeze(structure_of(model), freeze_config)
    apply_freeze_plan(model, plan)
    return plan
