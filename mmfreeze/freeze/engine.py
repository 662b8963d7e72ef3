"""A recipe's frozen set: the structure it trains (LoRA included), the engine its vocabulary asks for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.freeze.config import Vocabulary, detect_vocabulary
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.plan import FreezePlan, frozen_after
from mmfreeze.models.lora import with_lora_adapters
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.multimodal import parse_module_overrides
from mmfreeze.resolver.resolve import resolve_structure


FROZEN_SET_INPUTS = ("freeze_config", "peft", "multimodal")
"""The recipe sections :func:`compute_frozen_set` reads (besides the model structure)."""


@dataclass(frozen=True, kw_only=True)
class FrozenSetResult:
    """What one recipe freezes, and what it was computed on."""

    vocabulary: Vocabulary
    plan: FreezePlan
    """What the freezing engine froze (rules per parameter)."""
    frozen: frozenset[str]
    """Every frozen parameter after training setup: built frozen, frozen by LoRA injection, or by the plan."""
    structure: ModelStructure
    """The trained structure: the built model plus LoRA adapters when the recipe has `peft:`."""

    @property
    def frozen_numel(self) -> int:
        return sum(info.numel for info in self.structure.parameters if info.name in self.frozen)


def trained_structure(structure: ModelStructure, document: Mapping[str, Any], *, source: str) -> ModelStructure:
    """The structure training runs on: LoRA adapters injected when the recipe has a `peft:` section."""
    peft = document.get("peft")
    return structure if peft is None else with_lora_adapters(structure, peft, source=source)


def compute_frozen_set(structure: ModelStructure, document: Mapping[str, Any], *, source: str) -> FrozenSetResult:
    """Apply the recipe's `freeze_config` (either vocabulary) to its trained structure, as pure data."""
    trained = trained_structure(structure, document, source=source)
    section = document.get("freeze_config")
    vocabulary = detect_vocabulary(section, source=source)
    if vocabulary == "new":
        overrides = parse_module_overrides(document, source=source)
        inventory = resolve_structure(trained, override_specs=overrides)
        plan = plan_new_freeze(trained, section, source=source, inventory=inventory)
    else:
        plan = plan_legacy_freeze(trained, section)
    return FrozenSetResult(vocabulary=vocabulary, plan=plan, frozen=frozen_after(trained, plan), structure=trained)
