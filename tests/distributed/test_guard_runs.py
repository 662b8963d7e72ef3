"""The runtime guard under real FSDP2: 2 CPU processes, gloo, the tiny Llava with real weights.

Every rank checks its own sharded model (DTensor parameters) against the snapshot and posts its
verdict through the process group's store; there is no collective. A faithful run passes and
trains a step; when one rank's freezing differs, both ranks fail naming the rank that disagrees;
when one rank never reaches the guard, the other fails naming it at the deadline instead of
hanging. The worker's process group has a timeout, the run a hard deadline, pytest a timeout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.distributed.launch import launch_ranks
from tests.distributed.guard_worker import GUARD_SCENARIOS, RECIPE, TAMPERED
from tests.distributed.tiny_vlms import build_tiny
from tests.guard.helpers import TINY_FREEZE, write_snapshot

WORKER = Path(__file__).with_name("guard_worker.py")
DEADLINE_S = 150

pytestmark = pytest.mark.slow


def run_ranks(scenarios: list[str], out: Path, work: Path, *, pg_timeout_s: float, deadline_s: float) -> dict:
    """Both ranks' verdicts and exit codes (see :func:`launch_ranks`)."""
    arguments = [str(out / "store"), str(out), str(pg_timeout_s), str(work), *scenarios]
    run = launch_ranks(WORKER, arguments, out, deadline_s=deadline_s)
    results = {
        (name, rank): json.loads(path.read_text())
        for name in scenarios for rank in range(2)
        if (path := out / f"{name}.rank{rank}.json").exists()
    }
    return {"results": results, "codes": run.codes, "killed": run.killed, "seconds": run.seconds}


@pytest.fixture(scope="module")
def guard_runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("guard_work")
    write_snapshot(build_tiny("llava"), {"freeze_config": TINY_FREEZE}, work, RECIPE)
    out = tmp_path_factory.mktemp("guard_out")
    run = run_ranks(list(GUARD_SCENARIOS), out, work, pg_timeout_s=30, deadline_s=DEADLINE_S)
    assert run["codes"] == [0, 0], f"worker exit codes {run['codes']}, killed {run['killed']}"
    return run


def outcome(run: dict, name: str, rank: int) -> dict:
    return run["results"][(name, rank)]


@pytest.mark.timeout(200)
def test_faithful_sharded_ranks_pass_and_train_a_step(guard_runs):
    for rank in range(2):
        result = outcome(guard_runs, "faithful", rank)
        assert "error" not in result, result.get("traceback")
        assert result["tampered_is_dtensor"]
        verified = result["verified"]
        assert (verified["rank"], verified["world_size"], verified["ranks_compared"]) == (rank, 2, True)
        assert verified["snapshot"] == f"snapshots/{RECIPE}.frozen.txt" and verified["optimizer_checked"]


@pytest.mark.timeout(200)
def test_ranks_that_do_not_train_the_model_are_not_waited_for(guard_runs):
    """The model lives on a mesh of rank 0 alone (a distillation student on its own mesh); rank 1
    never reaches the guard. Rank 0 compares with the ranks of its model's mesh only: it passes
    at once, where waiting for every rank of the job would fail after its 30 s peer timeout."""
    rank0, rank1 = (outcome(guard_runs, "trained_on_rank_0_only", rank) for rank in range(2))
    assert rank1 == {"trains_nothing": True, "seconds": rank1["seconds"]}
    assert "error" not in rank0, rank0.get("traceback")
    assert (rank0["verified"]["rank"], rank0["verified"]["world_size"]) == (0, 2)
    assert rank0["tampered_is_dtensor"] and rank0["seconds"] < 20


@pytest.mark.timeout(200)
def test_under_ddp_the_wrapped_models_names_are_checked_and_both_ranks_stop_naming_the_one_that_differs(guard_runs):
    """The wrapper's ``module.`` is not part of the snapshot's names; its process group says which ranks train."""
    rank0, rank1 = (outcome(guard_runs, "ddp_one_rank_unfreezes", rank) for rank in range(2))
    assert rank0["error_type"] == rank1["error_type"] == "FrozenSetMismatchError", (rank0, rank1)
    assert f"      {TAMPERED}\n" in rank1["error"] and "module." not in rank1["error"]
    assert (f"  ranks that disagree: 1\n    rank 1: 1 newly trainable (e.g. {TAMPERED}); "
            "optimizer: 1 trainable missed\n") in rank0["error"]


@pytest.mark.timeout(200)
def test_a_model_no_mesh_or_wrapper_shares_is_checked_on_its_rank_alone(guard_runs):
    """On a one-rank mesh the framework does not shard: rank 1 never reaches the guard (a
    distillation teacher), and rank 0 does not wait for it."""
    rank0 = outcome(guard_runs, "unsharded_alone", 0)
    assert "error" not in rank0, rank0.get("traceback")
    assert rank0["verified"]["ranks_compared"] is False and rank0["seconds"] < 20


@pytest.mark.timeout(200)
def test_one_rank_with_different_freezing_fails_both_ranks_naming_it(guard_runs):
    """Rank 1 sets one frozen tower weight (a DTensor) trainable after sharding: rank 1's error names
    the weight, its module and itself; rank 0's says rank 0 agrees and rank 1 does not."""
    rank0, rank1 = (outcome(guard_runs, "one_rank_unfreezes", rank) for rank in range(2))
    assert rank0["error_type"] == rank1["error_type"] == "FrozenSetMismatchError"
    assert f"does not match the accepted snapshot snapshots/{RECIPE}.frozen.txt on rank 1 of 2" in rank1["error"]
    assert f"    model.vision_tower (vision tower): 1 tensor / 2,048 parameters\n      {TAMPERED}\n" in rank1["error"]
    assert "  ranks that disagree: 1 (this rank)\n" in rank1["error"] and "  ranks that agree: 0\n" in rank1["error"]
    assert "this rank (0) matches the accepted snapshot" in rank0["error"]
    assert (f"  ranks that disagree: 1\n    rank 1: 1 newly trainable (e.g. {TAMPERED}); "
            "optimizer: 1 trainable missed\n") in rank0["error"]
    assert "  ranks that agree: 0 (this rank)\n" in rank0["error"]
    assert max(rank0["seconds"], rank1["seconds"]) < 60


@pytest.mark.timeout(200)
def test_a_rank_that_never_reaches_the_guard_is_named_at_the_deadline(guard_runs):
    rank0, rank1 = (outcome(guard_runs, "one_rank_skips_the_guard", rank) for rank in range(2))
    assert rank1 == {"skipped": True, "seconds": rank1["seconds"]}
    assert rank0["error_type"] == "FrozenSetMismatchError"
    assert "  ranks that did not report within 3 s: 1\n  ranks that agree: 0 (this rank)\n" in rank0["error"]
    assert "call verify_frozen_set on every rank, the same number of times" in rank0["error"]
    assert rank0["seconds"] < 30
    assert guard_runs["seconds"] < DEADLINE_S
