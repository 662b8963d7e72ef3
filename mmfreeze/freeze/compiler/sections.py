"""A recipe's source compiled for its framework release: the sections 0.7 runs natively.

`migrate` writes, beside the reviewed source (:mod:`mmfreeze.recipes.layout`), what nemo-automodel
0.7 runs with no mmfreeze at training time: `freeze_config` as 0.7's own selectors
(:mod:`mmfreeze.freeze.compiler.selectors`) and the rates as `param_group_overrides` patterns, each taking
exactly the trainable tensors its source entry groups. Both are proven with the release's rules
on the model the run built before they are returned. `snapshot --check` holds the file to them
(:mod:`.check`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmfreeze.exceptions import NotNativelyExpressible
from mmfreeze.freeze.compiler.target import CompileTarget
from mmfreeze.freeze.engine import FrozenSetResult, compute_frozen_set
from mmfreeze.freeze.compiler.rates import compile_rates
from mmfreeze.freeze.compiler.selectors import compile_native_section
from mmfreeze.freeze.recipe_model import RateGrouping
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.layout import CompiledSections
from mmfreeze.boundary.releases import FrameworkRules


def compile_sections(
    result: FrozenSetResult, built: ModelStructure, document: Mapping[str, Any], *, target: CompileTarget,
    source: str, grouping: RateGrouping | None,
) -> CompiledSections:
    """The sections 0.7 runs natively for ``result`` (the source's outcome on ``built``), proven with
    the release's rules on ``built`` before they are returned; ``grouping``: the source's optimizer
    with selector entries and the groups they take, compiled into patterns (``None``: no rates)."""
    if target.release != "0.7":
        raise NotNativelyExpressible(f"nemo-automodel {target.release} has no module selectors to compile into; "
                                     "the recipe runs through mmfreeze's integration", source=source)
    native = compile_native_section(result.structure, result.frozen, lora=result.adapters is not None,
                                    source=source).as_section()
    proof = compute_frozen_set(built, {**document, "freeze_config": native}, source=source, override_specs=(),
                               rules=FrameworkRules(release="0.7"))
    if proof.frozen != result.frozen:
        differ = sorted(proof.frozen ^ result.frozen)
        raise NotNativelyExpressible(f"the compiled selectors do not freeze what the source does ({len(differ)} "
                                     f"tensors differ, first {differ[0]}); nothing written", source=source)
    rates = compile_rates(*grouping, result.structure, source=source) if grouping is not None else None
    return CompiledSections(freeze_config=native, param_group_overrides=rates, compiled_for=target.describe())
