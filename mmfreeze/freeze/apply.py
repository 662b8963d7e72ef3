"""Apply freezing to live models (meta or real). The only place `requires_grad` is written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmfreeze.freeze.config import FreezeConfig
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.invariants import invariant_freezes
from mmfreeze.freeze.plan import FreezePlan, frozen_after, plan_from_matches
from mmfreeze.freeze.summary import GroupSummary, summarize_frozen
from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.resolver.bind import resolve_model_inventory
from mmfreeze.resolver.spec import MultimodalModuleSpec

if TYPE_CHECKING:
    from torch import nn


@dataclass(frozen=True, kw_only=True)
class FreezeResult:
    """What a freezing call did to a live model."""

    plan: FreezePlan
    """The parameters this call froze, each with the rules that matched it."""
    frozen: frozenset[str]
    """Every frozen parameter afterwards (including those frozen before the call)."""
    groups: tuple[GroupSummary, ...]
    """Frozen / total tensors and parameters per resolved module and for the language model."""


def apply_freeze_plan(model: nn.Module, plan: FreezePlan) -> None:
    """Set ``requires_grad=False`` on every parameter the plan names; never sets it to True."""
    parameters = dict(model.named_parameters(remove_duplicate=False))
    for name in plan.frozen:
        parameters[name].requires_grad_(False)


def apply_frozen_set(model: nn.Module, frozen: frozenset[str]) -> None:
    """Make ``model``'s trainability exactly ``frozen`` (a computed set, unfreezes included)."""
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name not in frozen)


def with_invariants(structure: ModelStructure, plan: FreezePlan) -> FreezePlan:
    """``plan`` followed by the framework's invariant freezes, which every runtime ends with."""
    return plan_from_matches([
        *((name, rule) for name, rules in plan.rules_by_parameter.items() for rule in rules),
        *invariant_freezes(structure),
    ])


def apply_freeze_config(
    model: nn.Module,
    config: FreezeConfig | Mapping[str, Any],
    *,
    override_specs: Sequence[MultimodalModuleSpec] = (),
) -> FreezeResult:
    """Validate a new-vocabulary config against ``model``, freeze what it names and what the
    framework's invariants freeze, report the result.

    Call it after PEFT injection: ownership is resolved on the model as it is now.
    """
    structure = structure_of(model)
    inventory = resolve_model_inventory(model, override_specs=override_specs)
    plan = with_invariants(structure, plan_new_freeze(structure, config, inventory=inventory))
    return _apply(model, plan, override_specs)


def apply_legacy_freeze_config(
    model: nn.Module, freeze_config: Mapping[str, Any] | None, *, override_specs: Sequence[MultimodalModuleSpec] = ()
) -> FreezeResult:
    """Run the legacy engine on ``model`` (after LoRA injection, as training did), then the
    framework's invariant freezes, as nemo-automodel 0.6 did after it."""
    structure = structure_of(model)
    return _apply(model, with_invariants(structure, plan_legacy_freeze(structure, freeze_config)), override_specs)


def _apply(model: nn.Module, plan: FreezePlan, override_specs: Sequence[MultimodalModuleSpec]) -> FreezeResult:
    apply_freeze_plan(model, plan)
    after = structure_of(model)
    frozen = frozen_after(after, FreezePlan())
    inventory = resolve_model_inventory(model, override_specs=override_specs)
    return FreezeResult(plan=plan, frozen=frozen, groups=summarize_frozen(inventory, after, frozen))
