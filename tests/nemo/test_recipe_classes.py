"""Every recipe class of nemo-automodel 0.7.0, guarded (with the run that shows it) or refused (issue 41).

The classes are the framework's own list (``cli.utils._discover_recipe_classes``, what `automodel`
resolves ``recipe:`` against). Each guarded class has a recipe in ``tests/nemo/class_runs/recipes``
that names it; the recipes are snapshotted by `mmfreeze snapshot --update` and each is trained by
the class itself for its first optimizer steps, one CPU process under `mmfreeze train`
(``class_runs/run_class.py``). The run shows the guard's own line, printed before the first step.
A recipe that names a parameter under ``class_run: {unfreeze: NAME}`` is run again with that
frozen parameter set trainable after setup, and the guard must stop it: one such run for each way
a class builds its optimizer. A class that trains nothing the recipe's ``freeze_config`` decides is
refused by `mmfreeze train` with the reason; a class that steps no optimizer has nothing to guard.
VLM fine-tuning and distillation on separate meshes also run on 2 and 3 ranks
(``test_training_runs.py``). The table is printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.exceptions import IntegrationError, SnapshotError
from mmfreeze.nemo.launch import UNGUARDED_RECIPES, check_launch
from tests.conftest import MMFREEZE, SUMMARY_LINE_PROPERTY
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, pytest.mark.slow, requires_framework]

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "class_runs" / "run_class.py"
NOT_TRAINING = {"MineHardNegativesRecipe": "mines hard negatives with a frozen encoder: no optimizer steps",
                "PeagleRecipeMixin": "a mixin of the speculative-decoding recipes, not a recipe"}
GUARD_MARK = "mmfreeze guard:"
SHOWN_ON_RANKS = {"FinetuneRecipeForVLM": "2 ranks, FSDP2 (test_training_runs.py)",
                  "KnowledgeDistillationRecipeForVLM": "2 and 3 ranks, separate meshes (test_training_runs.py)"}


@dataclass(frozen=True)
class ClassRun:
    recipe: str
    code: int
    guard_lines: tuple[str, ...]
    result: Mapping[str, Any]


def recipe_classes() -> dict[str, str]:
    from nemo_automodel.cli.utils import _discover_recipe_classes

    return dict(sorted(_discover_recipe_classes().items()))


def run_class(root: Path, recipe: Path, *extra: str) -> ClassRun:
    out = root / f"{recipe.stem}{'.unfrozen' if extra else ''}.json"
    command = [*MMFREEZE, "train", "--", sys.executable, str(RUNNER), str(recipe.relative_to(root)), str(out), *extra]
    environment = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
    ran = subprocess.run(command, cwd=root, env=environment, capture_output=True, text=True, timeout=400)
    # A progress bar may precede the guard's line on the same line (it ends with \r, not \n).
    lines = tuple(GUARD_MARK + line.split(GUARD_MARK, 1)[1] for line in ran.stderr.splitlines() if GUARD_MARK in line)
    result = json.loads(out.read_text()) if out.exists() else {"error": ran.stderr[-2000:]}
    return ClassRun(recipe=str(recipe.relative_to(root)), code=ran.returncode, guard_lines=lines, result=result)


@pytest.fixture(scope="module")
def class_runs(class_runs_repository) -> dict[str, tuple[ClassRun, ClassRun | None]]:
    """Each class run trained (and, when it names one, trained again with a parameter unfrozen after
    setup); two runs at a time, one per core. Keyed by class name."""
    root, documents = class_runs_repository
    jobs = [(path, ()) for path in documents]
    jobs += [(path, ("--unfreeze", document["class_run"]["unfreeze"])) for path, document in documents.items()
             if "unfreeze" in (document.get("class_run") or {})]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(jobs, pool.map(lambda job: run_class(root, job[0], *job[1]), jobs)))
    by_class: dict[str, tuple[ClassRun, ClassRun | None]] = {}
    for path, document in documents.items():
        name = str(document["recipe"]).rpartition(".")[2]
        unfrozen = next((run for (job, extra), run in runs.items() if job == path and extra), None)
        by_class[name] = (runs[(path, ())], unfrozen)
    return by_class


def verdict(name: str, dotted: str, runs: Mapping[str, tuple[ClassRun, ClassRun | None]], tmp_path: Path) -> tuple[str, str]:
    if name in NOT_TRAINING:
        return "nothing to guard", NOT_TRAINING[name]
    if name in runs:
        run, unfrozen = runs[name]
        shown = f"{run.recipe}: {run.guard_lines[0] if run.guard_lines else 'no guard line'}"
        if unfrozen is not None:
            shown += f"; with {unfrozen.result.get('unfreeze')} unfrozen after setup: " + (
                str(unfrozen.result.get("error") or "it trained").splitlines()[0][:100])
        if name in SHOWN_ON_RANKS:
            shown += f"; also on {SHOWN_ON_RANKS[name]}"
        return "guarded at step 0", shown
    recipe = tmp_path / f"{name}.yaml"
    recipe.write_text(f"recipe: {dotted}\nmodel: {{}}\n")
    try:
        check_launch(recipe, guard=None)
    except IntegrationError as error:
        return "refused at launch", error.message
    except SnapshotError:
        pass  # not refused for its class: the launch asked for this recipe's snapshot next
    return "no run", "no recipe in tests/nemo/class_runs/recipes names this class"


def test_every_recipe_class_of_0_7_0_is_guarded_by_a_run_or_refused_with_the_reason(
    class_runs, tmp_path: Path, record_property: Any,
) -> None:
    classes = recipe_classes()
    assert len(classes) >= 20
    table = {name: verdict(name, dotted, class_runs, tmp_path) for name, dotted in classes.items()}
    lines = ["recipe classes of nemo-automodel 0.7.0 under `mmfreeze train`:"]
    lines += [f"  {name}: {outcome}: {why}" for name, (outcome, why) in table.items()]
    record_property(SUMMARY_LINE_PROPERTY, "\n".join(lines))
    refused = {name for name, (outcome, _) in table.items() if outcome == "refused at launch"}
    assert refused == set(UNGUARDED_RECIPES), "refused exactly the classes whose runs no snapshot can describe"
    assert all(UNGUARDED_RECIPES[name] in table[name][1] for name in refused)
    assert [name for name, (outcome, _) in table.items() if outcome == "no run"] == [], "\n".join(lines)
    for name, (run, unfrozen) in class_runs.items():
        assert run.code == 0 and run.result.get("error") is None, (name, run.result.get("traceback") or run.result)
        assert len(run.guard_lines) == 1 and " matches its snapshot (" in run.guard_lines[0], (name, run.guard_lines)
        assert "optimizer checked" in run.guard_lines[0]
        if unfrozen is not None:
            assert unfrozen.code != 0, name
            assert str(unfrozen.result.get("error", "")).startswith(f"FrozenSetMismatchError: {run.recipe}: "), (
                name, unfrozen.result)


def test_one_run_stopped_by_the_guard_for_each_way_a_guarded_class_builds_its_optimizer(class_runs) -> None:
    """The optimizer config's build (LLM fine-tuning) and ``opt_cfg.instantiate(params=...)``
    (BAGEL) each have a class whose run with a parameter unfrozen after setup the guard stopped
    (the classes that build theirs otherwise, retrieval and speculative decoding, are refused)."""
    stopped = {name for name, (_, unfrozen) in class_runs.items() if unfrozen is not None and unfrozen.code != 0}
    assert {"TrainFinetuneRecipeForNextTokenPrediction", "FinetuneRecipeForMultimodal"} <= stopped
