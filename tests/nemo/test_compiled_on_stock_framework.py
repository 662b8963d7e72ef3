"""Issue 39: the unmodified nemo-automodel 0.7.0 trains what `mmfreeze migrate` compiled, name by name.

Every bundled recipe keeps its `(modality, role)` source under `mmfreeze:` and, beside it, the
`freeze_config` (and rate patterns) compiled for nemo-automodel 0.7 on the model the framework
builds. Here, with no mmfreeze integration installed (the framework's functions are its own), the
framework's LoRA injection, ``parse_freeze_config`` and ``_apply_trainability_policy`` (invariants
included) on the framework-built meta model leave trainable exactly the set mmfreeze computes from
the source; and the framework's typed optimizer config groups the compiled rates as the source's.

The trainable sets come from a process that never imports mmfreeze (``stock_worker.py``): the
models mmfreeze built on meta are handed to it with ``torch.save`` (``dill``: the framework's
classes hold closures). The rates run beside mmfreeze, with nothing of it installed into the
framework (:func:`assert_stock_framework`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.distributed.native import native_support
from mmfreeze.freeze.keys import detect_vocabulary
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT, recipes_under
from tests.nemo.framework_env import requires_framework
from tests.nemo.framework_pipeline import (
    built_model, framework_trained, mmfreeze_outcome, read_recipe,
)
from tests.nemo.test_rates_through_framework import build_optimizer

pytestmark = [pytest.mark.framework, requires_framework]

CORPUS = recipes_under(EXAMPLE_CONFIGS)
COMPILED = [path for path in CORPUS if read_recipe(path).compiled is not None]
RATED = [path for path in COMPILED if read_recipe(path).compiled.param_group_overrides is not None]


def label(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def assert_stock_framework() -> None:
    """Nothing of mmfreeze replaces the framework's functions in this process."""
    from nemo_automodel._transformers import infrastructure
    from nemo_automodel.components.optim import optimizer
    from nemo_automodel.components.utils import model_utils

    from mmfreeze import nemo

    assert not nemo.installed()
    for function in (infrastructure._apply_trainability_policy, infrastructure.parse_freeze_config,
                     infrastructure.apply_parameter_freezing, model_utils.parse_freeze_config,
                     optimizer._coerce_param_group_overrides, optimizer.OptimizerConfig.build):
        assert function.__module__.startswith("nemo_automodel."), function


def test_no_bundled_recipe_needs_the_integration_for_what_it_trains() -> None:
    """The file as the framework reads it: 0.7's own `freeze_config` (or none) and rate patterns; a
    recipe still needs the integration only for `distributed.multimodal` additions 0.7 cannot state."""
    support = {label(path): native_support(read_recipe(path).framework_document) for path in CORPUS}
    trainability = {name: found.keys for name, found in support.items()
                    if any(not key.startswith("distributed.") for key in found.keys)}
    assert trainability == {}
    assert all(read_recipe(path).compiled is not None for path in CORPUS
               if detect_vocabulary(read_recipe(path).document.get("freeze_config")) == "new")
    needs = {name: found.describe() for name, found in support.items() if found.verdict != "native"}
    print(f"{len(CORPUS) - len(needs)} of {len(CORPUS)} bundled recipes run on the stock framework; "
          f"{len(needs)} need the integration: {needs}")


@pytest.mark.parametrize("recipe", RATED, ids=label)
def test_the_stock_framework_groups_the_compiled_rates_as_the_source(recipe: Path, tmp_path: Path) -> None:
    assert_stock_framework()
    model = framework_trained(recipe, "framework")
    optimizer = build_optimizer(recipe, model, tmp_path)
    name_of = {id(parameter): name for name, parameter in model.named_parameters()}
    groups = {}
    for group in optimizer.param_groups:
        rate = (float(group.get("lr_mult", 1.0)), float(group.get("wd_mult", 1.0)))
        if rate != (1.0, 1.0):
            groups.setdefault(rate, set()).update(name_of[id(p)] for p in group["params"])
    from mmfreeze.freeze.recipe_model import recipe_frozen_set
    from mmfreeze.models.structure import structure_of
    from tests.nemo.framework_pipeline import built_model

    source = recipe_frozen_set(read_recipe(recipe), structure_of(built_model(recipe, "framework")))
    assert groups == {rate: set(names) for rate, names in source.rates.items()}
    assert groups, "the recipe's rates group no tensor"


@pytest.mark.slow
def test_a_process_without_mmfreeze_trains_what_the_source_says(tmp_path: Path) -> None:
    saved: dict[int, Path] = {}
    jobs = []
    import dill
    import torch

    for recipe in COMPILED:
        model = built_model(recipe, "framework")
        if id(model) not in saved:
            saved[id(model)] = tmp_path / f"model{len(saved)}.pt"
            torch.save(model, saved[id(model)], pickle_module=dill)  # the framework's classes hold closures
        drafter = read_recipe(recipe).model.drafter
        jobs.append({"model": str(saved[id(model)]), "recipe": str(recipe),
                     "drafter": drafter.arguments() if drafter is not None else None})
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    worker = Path(__file__).with_name("stock_worker.py")
    run = subprocess.run([sys.executable, str(worker), str(tmp_path / "jobs.json"), str(tmp_path / "out.json")],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["mmfreeze_modules"] == []
    differ = {}
    for recipe in COMPILED:
        stock, expected = set(result["trainable"][str(recipe)]), mmfreeze_outcome(recipe, "framework").trainable
        if stock != expected:
            differ[label(recipe)] = {"newly trainable": sorted(stock - expected)[:3],
                                     "newly frozen": sorted(expected - stock)[:3]}
    assert differ == {}
    assert len(result["trainable"]) == len(COMPILED)
