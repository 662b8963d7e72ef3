"""Pipeline stages, each checked against the snapshot names it holds (issue 41).

Two ranks on gloo, one stage each (1F1B, the framework's default schedule): the framework's own tiny
Llama class, frozen by its ``apply_parameter_freezing``, cut by its ``split_model_into_stages`` and
stepped by its ``build_pipeline_schedule`` (``pipeline_worker.py``), with the guard armed as
`mmfreeze train` arms it for ``pp_size`` above 1. The recipe and its snapshot are the LLM
fine-tuning class run's (``class_runs/recipes/llm_finetune.yaml``: the embeddings frozen).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.distributed.launch import launch_ranks
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, pytest.mark.slow, requires_framework]

WORKER = Path(__file__).with_name("pipeline_worker.py")
RECIPE = "recipes/llm_finetune.yaml"
EMBEDDINGS = "model.embed_tokens.weight"


def run_pipeline(repository: Path, out: Path, *extra: str) -> dict[int, dict[str, Any]]:
    out.mkdir()
    run = launch_ranks(WORKER, [str(out / "store"), str(out), "30", str(repository), RECIPE, *extra], out,
                       deadline_s=150)
    assert run.codes == [0, 0] and not run.killed, [(out / f"log{rank}").read_text()[-2000:] for rank in range(2)]
    return {rank: json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)}


def test_each_stage_matches_the_snapshot_names_it_holds_and_says_so(class_runs_repository, tmp_path: Path) -> None:
    ranks = run_pipeline(class_runs_repository[0], tmp_path / "match")
    for rank, result in ranks.items():
        assert "error" not in result, result.get("traceback")
        assert result["stepped"]
    assert ranks[0]["names"][0] == EMBEDDINGS and "lm_head.weight" in ranks[1]["names"]
    assert ranks[0]["said"] == [f"mmfreeze guard: rank 0 of 2: {RECIPE} matches its snapshot (9 trainable, 1 frozen "
                                "tensors, this pipeline stage; optimizer checked)"]
    assert ranks[1]["said"] == [f"mmfreeze guard: rank 1 of 2: {RECIPE} matches its snapshot (11 trainable, 0 frozen "
                                "tensors, this pipeline stage; optimizer checked)"]


def test_a_stage_unfrozen_after_setup_stops_every_stage_before_the_first_step(class_runs_repository, tmp_path: Path) -> None:
    ranks = run_pipeline(class_runs_repository[0], tmp_path / "unfrozen", "--unfreeze", EMBEDDINGS)
    assert not any(result.get("stepped") for result in ranks.values())
    assert ranks[0]["error"].startswith(f"FrozenSetMismatchError: {RECIPE}: the live model does not match")
    assert f"      {EMBEDDINGS}\n" in ranks[0]["error"]
    assert ranks[1]["error"].startswith(f"FrozenSetMismatchError: {RECIPE}: this rank (1) matches")
    assert f"rank 0: 1 newly trainable (e.g. {EMBEDDINGS})" in ranks[1]["error"]
