"""Issue 39: the unmodified nemo-automodel 0.7.0 trains what `mmfreeze migrate` compiled, name by name.

Every bundled recipe keeps its `(modality, role)` source under `mmfreeze:` and, beside it, the
`freeze_config` (and rate patterns) compiled for nemo-automodel 0.7 on the model the framework
builds. Here, with no mmfreeze integration installed (the framework's functions are its own), the
framework's LoRA injection, ``parse_freeze_config`` and ``_apply_trainability_policy`` (invariants
included) on the framework-built meta model leave trainable exactly the set mmfreeze computes from
the source; and the framework's typed optimizer config groups the compiled rates as the source's.

The trainable sets and the rates come from a process that never imports mmfreeze
(``stock_worker.py``): the models mmfreeze built on meta are handed to it with ``torch.save``
(``dill``: the framework's classes hold closures), and its groups are compared with the committed
snapshots' rate sections, name by name.
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
from tests.nemo.framework_pipeline import built_model, mmfreeze_outcome, read_recipe

pytestmark = [pytest.mark.framework, requires_framework]

CORPUS = recipes_under(EXAMPLE_CONFIGS)
COMPILED = [path for path in CORPUS if read_recipe(path).compiled is not None]
RATED = [path for path in COMPILED if read_recipe(path).compiled.param_group_overrides is not None]


def label(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def committed_snapshot(recipe: Path):
    from mmfreeze.snapshots.format import parse_snapshot
    from mmfreeze.snapshots.layout import snapshot_path

    path = snapshot_path(recipe, REPO_ROOT, REPO_ROOT / "snapshots")
    return parse_snapshot(path.read_text(), source=str(path))


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


@pytest.mark.slow
def test_a_process_without_mmfreeze_trains_the_snapshots_set_at_the_snapshots_rates(tmp_path: Path) -> None:
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
    assert sorted(result["rates"]) == sorted(str(recipe) for recipe in RATED) and RATED
    for recipe in RATED:
        stored = committed_snapshot(recipe)
        assert result["rates"][str(recipe)] == {name: list(rate) for name, rate in stored.rate_of.items()}, label(recipe)
