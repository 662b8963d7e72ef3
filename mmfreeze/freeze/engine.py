"""A recipe's frozen set, computed in nemo-automodel's order on the structure it trains.

``_apply_trainability_policy`` (0.7, ``_transformers/infrastructure.py``): LoRA injection and the
PEFT baseline when the recipe has `peft:`, then the `freeze_config` (legacy flags and
`freeze_modules`, then `unfreeze_modules`), then the framework's invariant freezes, which nothing
undoes. A new-vocabulary section takes the `freeze_config` step's place and only freezes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmfreeze.freeze.keys import Vocabulary, detect_vocabulary
from mmfreeze.freeze.framework import framework_freeze_steps, parse_framework_freeze_config
from mmfreeze.freeze.invariants import invariant_freezes
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.plan import FreezePlan, plan_from_matches
from mmfreeze.models.lora import ADAPTER_MARK, parse_peft_section, with_lora_adapters
from mmfreeze.models.structure import ModelStructure
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from mmfreeze.resolver.resolve import resolve_structure
from mmfreeze.resolver.spec import MultimodalModuleSpec

PEFT_BASELINE_RULE = "peft baseline: not a LoRA adapter"
BUILT_FROZEN_RULE = "built frozen"


@dataclass(frozen=True, kw_only=True)
class FrozenSetResult:
    """What one recipe freezes, and what it was computed on."""

    vocabulary: Vocabulary
    """The input vocabulary (never part of a snapshot: the same behaviour gives the same one)."""
    rules: FrameworkRules
    """The framework release whose rules gave this set."""
    plan: FreezePlan
    """Every frozen parameter with the rule that froze it last (``built frozen`` included)."""
    structure: ModelStructure
    """The trained structure: the built model plus LoRA adapters when the recipe has `peft:`."""
    adapters: frozenset[str] | None
    """The LoRA adapter names in ``structure`` when the recipe has `peft:` (``None`` without it)."""
    rates: Mapping[tuple[float, float], frozenset[str]] = field(default_factory=dict)
    """Trainable tensors the optimizer's `param_group_overrides` put at another ``(lr_mult,
    wd_mult)`` than ``(1, 1)`` (:func:`mmfreeze.freeze.param_groups.rates_of`)."""

    @property
    def frozen(self) -> frozenset[str]:
        return self.plan.frozen

    @property
    def frozen_numel(self) -> int:
        return sum(info.numel for info in self.structure.parameters if info.name in self.frozen)


def trained_structure(
    structure: ModelStructure, document: Mapping[str, Any], *, source: str, rules: FrameworkRules = CURRENT_RULES,
) -> ModelStructure:
    """The structure training runs on: LoRA injected and the PEFT baseline set when the recipe has `peft:`."""
    section = document.get("freeze_config")
    return _trained(structure, document, rules_for(rules, detect_vocabulary(section, source=source)), source=source)


def rules_for(repository: FrameworkRules, vocabulary: Vocabulary) -> FrameworkRules:
    """The repository's release reads a framework-vocabulary section; a new-vocabulary one runs on
    mmfreeze's runtime, which ends with 0.7's invariants whatever the release."""
    return CURRENT_RULES if vocabulary == "new" else repository


def _trained(structure: ModelStructure, document: Mapping[str, Any], rules: FrameworkRules, *, source: str) -> ModelStructure:
    peft = document.get("peft")
    if peft is None:
        return structure
    return with_lora_adapters(structure, parse_peft_section(peft, source=source), rules.release)


def compute_frozen_set(
    structure: ModelStructure, document: Mapping[str, Any], *, source: str,
    override_specs: Sequence[MultimodalModuleSpec], invariants: bool = True, rules: FrameworkRules = CURRENT_RULES,
) -> FrozenSetResult:
    """Run the recipe's trainability pipeline on ``structure``, as pure data.

    ``override_specs``: the recipe's `multimodal.modules` overrides, already turned into resolver
    specs by the caller (the engine does not read recipe sections it does not own); ``rules``: the
    release the repository trains on (:func:`mmfreeze.boundary.releases.framework_rules`).
    """
    section = document.get("freeze_config")
    vocabulary = detect_vocabulary(section, source=source)
    rules = rules_for(rules, vocabulary)
    trained = _trained(structure, document, rules, source=source)
    steps = [*_model_steps(trained, section, vocabulary, rules, source=source, override_specs=override_specs,
                           invariants=invariants)]
    lora = document.get("peft") is not None
    plan = final_plan(trained, steps, start_rule=PEFT_BASELINE_RULE if lora else BUILT_FROZEN_RULE)
    return FrozenSetResult(vocabulary=vocabulary, rules=rules, plan=plan, structure=trained,
                           adapters=adapter_names(trained) if lora else None)


def _model_steps(
    trained: ModelStructure, section: Any, vocabulary: Vocabulary, rules: FrameworkRules, *, source: str,
    override_specs: Sequence[MultimodalModuleSpec], invariants: bool,
) -> Iterator[tuple[str, bool, str]]:
    """The ``(name, trainable, rule)`` steps of the recipe's pipeline on ``trained``.

    A composite's parts each get the framework's policy as if loaded alone (the recipe's section
    reaches only the part it is forwarded to), then the composite's constructor freezes more."""
    if trained.parts:
        for part in trained.parts:
            own = trained.part(part)
            forwarded = (section, vocabulary) if part.freeze_config else (None, "absent")
            for name, trainable, rule in _model_steps(own, *forwarded, rules, source=source,
                                                      override_specs=override_specs, invariants=invariants):
                yield f"{part.prefix}.{name}", trainable, rule
        yield from ((name, False, f"{trained.class_name} constructor") for name in sorted(trained.composite_frozen))
        return
    yield from _section_steps(trained, section, vocabulary, rules, source=source, override_specs=override_specs)
    # ``invariants=False``: what a direct call of 0.7's ``apply_parameter_freezing`` does, which
    # leaves the invariant freezes to ``_apply_trainability_policy``.
    if invariants:
        yield from ((name, False, rule) for name, rule in invariant_freezes(trained))


def adapter_names(structure: ModelStructure) -> frozenset[str]:
    """The LoRA adapter parameters: those the PEFT baseline tells apart by name."""
    return frozenset(info.name for info in structure.parameters if ADAPTER_MARK in info.name)


def _section_steps(
    trained: ModelStructure, section: Any, vocabulary: Vocabulary, rules: FrameworkRules, *, source: str,
    override_specs: Sequence[MultimodalModuleSpec],
) -> Iterable[tuple[str, bool, str]]:
    if vocabulary == "absent":
        return ()
    if vocabulary == "new":
        inventory = resolve_structure(trained, override_specs=override_specs)
        plan = plan_new_freeze(trained, section, source=source, inventory=inventory)
        return ((name, False, found[0]) for name, found in plan.rules_by_parameter.items())
    config = parse_framework_freeze_config(section, rules, source=source)
    return framework_freeze_steps(trained, config, source=source)


def final_plan(structure: ModelStructure, steps: Iterable[tuple[str, bool, str]], *, start_rule: str) -> FreezePlan:
    """The frozen set after ``(name, trainable, rule)`` steps in order, starting from the
    structure's own ``requires_grad`` (frozen there by ``start_rule``); each frozen name keeps
    the rule that froze it last."""
    decided = {info.name: (info.requires_grad, start_rule) for info in structure.parameters}
    for name, trainable, rule in steps:
        decided[name] = (trainable, rule)
    return plan_from_matches((name, rule) for name, (trainable, rule) in decided.items() if not trainable)
