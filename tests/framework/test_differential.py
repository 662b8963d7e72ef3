"""Differential tests: mmfreeze's snapshot path against nemo-automodel's own functions.

Every bundled registry model is built on the meta device; each case of the section matrix
(`cases.py`: legacy flags, 0.7 selectors, LoRA shapes, rejections) runs through the installed
framework (`oracle.py`) on a fresh copy of the model and through mmfreeze's snapshot path (frozen
set computed on the structure, stored as a snapshot and read back). The frozen sets must be equal;
what the framework rejects must be an mmfreeze input error naming the key; what only 0.6 accepted is
that error too, unless the repository declares 0.6, where mmfreeze applies 0.6's rules and its header
says so. The counts are printed at the end of the run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.models.build import resolve_model_class
from mmfreeze.models.framework import BuildSpec, framework_class_for
from mmfreeze.models.loader import build_config, build_live
from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from mmfreeze.snapshots.format import parse_snapshot, render_snapshot
from mmfreeze.snapshots.compute import snapshot_of
from tests.framework.cases import Case, cases_for
from tests.conftest import TALLY_PROPERTY
from tests.framework.oracle import framework_trainability
from tests.nemo.framework_env import once_per_framework_release

pytestmark = [pytest.mark.framework, once_per_framework_release]

REGISTRY = Path(__file__).resolve().parents[2] / "mmfreeze" / "registry" / "configs"
AUTO_CLASSES = ("AutoModelForImageTextToText", "AutoModelForMultimodalLM", "AutoModelForCausalLM",
                "AutoModelForSpeechSeq2Seq")
DECLARED_06 = FrameworkRules(release="0.6", reason="[tool.mmfreeze] framework")
"""A repository that declares 0.6: what the pre-0.7 cases trained on."""
FAST_MODELS = ("HuggingFaceTB__SmolVLM2-2.2B-Instruct", "Qwen__Qwen2-VL-2B-Instruct", "google__gemma-4-E2B-it",
               "Qwen__Qwen2-Audio-7B-Instruct")
"""Run without `slow` too, so a local `-m "not slow"` run in the framework's environment still compares
against the framework."""


def _config(name: str) -> dict[str, Any]:
    return json.loads((REGISTRY / f"{name}.json").read_text())["config"]


FRAMEWORK_ONLY_AUTO_CLASS = "AutoModelForImageTextToText"
"""For a checkpoint only the framework builds (by ``architectures``: LLaVA-OneVision-1.5's hub config
is custom code for transformers), the Auto class its bundled recipe's target names."""


@cache
def auto_class(name: str) -> str:
    """The first Auto class that maps this config (the one its recipes use)."""
    try:
        config = build_config(_config(name), source=name)
    except MmfreezeError:
        if framework_class_for(_config(name)) is None:
            raise
        return FRAMEWORK_ONLY_AUTO_CLASS
    for candidate in AUTO_CLASSES:
        try:
            resolve_model_class(config, candidate)
        except MmfreezeError:
            continue
        return candidate
    raise AssertionError(f"{name}: no Auto class maps model_type {config.model_type!r}")


def fresh_model(name: str):
    """The model a recipe of this checkpoint on a `NeMoAutoModel*` target trains, built on meta: the
    transformers class, or the framework's own where transformers has none."""
    spec = BuildSpec(kind="transformers", stand_in="0.7.0")
    return build_live(_config(name), auto_class(name), source=name, build=spec).model


def registry_models() -> list[Any]:
    names = sorted(path.stem for path in REGISTRY.glob("*.json"))
    return [name if name in FAST_MODELS else pytest.param(name, marks=pytest.mark.slow) for name in names]


def mmfreeze_trainability(
    structure: ModelStructure, case: Case, rules: FrameworkRules = CURRENT_RULES,
) -> tuple[frozenset[str], frozenset[str], str]:
    """The snapshot path: compute, store as a snapshot, read back; frozen names, trainable names
    (the rest of the trained structure, whose count the header must state) and the release."""
    result = compute_frozen_set(structure, case.document, source="case.yaml", override_specs=(), rules=rules)
    snapshot = snapshot_of(result, recipe="case.yaml", model_id="m", config="local")
    stored = parse_snapshot(render_snapshot(snapshot))
    trainable = frozenset(info.name for info in result.structure.parameters) - stored.frozen
    assert stored.header.trainable_tensors == len(trainable)
    return stored.frozen, trainable, stored.header.framework


def check_case(name: str, structure: ModelStructure, case: Case, model_for_case) -> str | None:
    """``None`` when mmfreeze agrees with the framework on ``case``, else what differs."""
    if case.kind == "rejection":
        return _check_rejection(structure, case, model_for_case)
    framework_section = case.as_06_reads_it if case.kind == "pre-0.7" else case.freeze_config
    expected = framework_trainability(model_for_case(), framework_section, case.peft)
    if case.kind == "pre-0.7" and (problem := _rejected_unless_declared(structure, case)):
        return problem
    try:
        *actual, release = mmfreeze_trainability(structure, case, DECLARED_06 if case.kind == "pre-0.7" else CURRENT_RULES)
    except MmfreezeError as error:
        return f"mmfreeze rejected what the framework accepts: {error}"
    if case.kind == "pre-0.7" and release != "nemo-automodel 0.6":
        return f"expected 0.6's rules where the repository declares 0.6, header says {release!r}"
    return "; ".join(_difference(kind, want, got) for kind, want, got in zip(("frozen", "trainable"), expected, actual)
                     if want != got) or None


def _rejected_unless_declared(structure: ModelStructure, case: Case) -> str | None:
    """A section only 0.6 read is an input error naming its key in a 0.7 repository."""
    try:
        mmfreeze_trainability(structure, case)
    except MmfreezeError as error:
        return None if case.rejected_key in str(error) else f"the 0.7 error does not name {case.rejected_key}: {error}"
    return "mmfreeze accepted under 0.7 what only 0.6 read"


def _difference(kind: str, expected: frozenset[str], actual: frozenset[str]) -> str:
    return (f"{len(expected - actual)} {kind} only by the framework (e.g. {sorted(expected - actual)[:3]}), "
            f"{len(actual - expected)} {kind} only by mmfreeze (e.g. {sorted(actual - expected)[:3]})")


def _check_rejection(structure: ModelStructure, case: Case, model_for_case) -> str | None:
    try:
        framework_trainability(model_for_case(), case.freeze_config, case.peft)
    except (ValueError, TypeError):
        pass
    else:
        return "the framework accepted it"
    try:
        mmfreeze_trainability(structure, case)
    except MmfreezeError as error:
        message = str(error)
        if "case.yaml" not in message or case.rejected_key not in message:
            return f"the error does not name the recipe and {case.rejected_key}: {message}"
        return None
    return "mmfreeze accepted what the framework rejects"


@pytest.mark.parametrize("name", registry_models())
def test_frozen_sets_equal_the_framework(name: str, record_property: Callable[[str, object], None]) -> None:
    """Every case of the matrix gives the framework's frozen set, or its rejection, on this model."""
    model = fresh_model(name)
    structure = structure_of(model)
    built = {param_name: parameter.requires_grad for param_name, parameter in model.named_parameters()}

    def reset_model():
        # Freezing cases only set requires_grad: restore the built state instead of rebuilding.
        for param_name, parameter in model.named_parameters():
            parameter.requires_grad_(built[param_name])
        return model

    differences, tally = [], Counter[str]()
    for case in cases_for(structure):
        model_for_case = (lambda: fresh_model(name)) if case.peft is not None else reset_model
        difference = check_case(name, structure, case, model_for_case)
        if difference is None:
            tally[case.kind] += 1
        else:
            differences.append(f"{case.name}: {difference}")
    assert not differences, f"{name} ({structure.class_name}):\n" + "\n".join(differences)
    record_property(TALLY_PROPERTY, {**tally, "models": 1})
