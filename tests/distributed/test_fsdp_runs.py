"""Real FSDP2 runs: 2 CPU processes, gloo, tiny Qwen2-VL / Llava with real weights.

Every run has a process-group timeout (the worker's) and a hard deadline (here: leftover
processes are killed), plus a pytest timeout, so nothing can hang CI. The accepted scenarios share
one pair of processes (imports dominate the cost); the hazard gets its own, since it breaks the
process group.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tests.distributed.launch import launch_ranks
from tests.distributed.scenarios import SCENARIOS, reference_step

WORKER = Path(__file__).with_name("fsdp_worker.py")
LR = 0.1  # the worker's
ACCEPTED = [
    "uniform_root", "uniform_per_layer", "uniform_replicate", "dummy_qwen2_vl", "dummy_llava",
    "frozen_root_asymmetric", "uniformity_always",
]

pytestmark = pytest.mark.slow


def run_ranks(scenarios: list[str], out: Path, *, pg_timeout_s: float, deadline_s: float) -> dict:
    """Both ranks' results and exit codes (see :func:`launch_ranks`)."""
    run = launch_ranks(WORKER, [str(out / "store"), str(out), str(pg_timeout_s), *scenarios], out, deadline_s=deadline_s)
    results = {
        (name, rank): torch.load(path, weights_only=False)
        for name in scenarios for rank in range(2)
        if (path := out / f"{name}.rank{rank}.pt").exists()
    }
    return {"results": results, "codes": run.codes, "killed": run.killed, "seconds": run.seconds}


@pytest.fixture(scope="module")
def accepted_runs(tmp_path_factory):
    run = run_ranks(ACCEPTED, tmp_path_factory.mktemp("fsdp"), pg_timeout_s=30, deadline_s=150)
    assert run["codes"] == [0, 0], f"worker exit codes {run['codes']}, killed {run['killed']}"
    return run["results"]


def ok(results: dict, name: str) -> tuple[dict, dict]:
    ranks = results[(name, 0)], results[(name, 1)]
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"{name} rank {rank}: {result.get('traceback')}"
    return ranks


def assert_matches_reference(name: str, ranks: tuple[dict, dict]) -> None:
    """Losses, averaged gradients and post-step parameters equal the single-process reference;
    parameters are identical across ranks."""
    reference = reference_step(SCENARIOS[name], lr=LR)
    assert [r["loss"] for r in ranks] == pytest.approx(reference["losses"], rel=1e-6)
    assert set(ranks[0]["grads"]) == set(reference["grads"])
    for param, grad in reference["grads"].items():
        torch.testing.assert_close(ranks[0]["grads"][param], grad, rtol=1e-5, atol=1e-6, msg=param)
    for param, value in reference["params"].items():
        assert torch.equal(ranks[0]["params"][param], ranks[1]["params"][param]), param
        torch.testing.assert_close(ranks[0]["params"][param], value, rtol=1e-5, atol=1e-6, msg=param)


@pytest.mark.timeout(200)
@pytest.mark.parametrize("strategy", ["root", "per_layer", "replicate"])
def test_rank_uniform_batches_match_single_process_reference(accepted_runs, strategy):
    """Rank-uniform images, frozen tower under each frozen_sharding: one step, same as reference."""
    assert_matches_reference(f"uniform_{strategy}", ok(accepted_runs, f"uniform_{strategy}"))


@pytest.mark.timeout(200)
def test_replicate_keeps_frozen_tower_full_and_unsharded(accepted_runs):
    """replicate -> every frozen tower parameter is a plain full tensor on each rank."""
    reference = reference_step(SCENARIOS["uniform_replicate"], lr=LR)["params"]
    for result in ok(accepted_runs, "uniform_replicate"):
        tower = {k: v for k, v in result["local"].items() if k.startswith("model.vision_tower.")}
        assert tower and all(kind == "Tensor" and shape == tuple(reference[k].shape) for k, (kind, shape) in tower.items())
        assert result["local"]["model.multi_modal_projector.linear_1.weight"][0] == "DTensor"


@pytest.mark.timeout(200)
@pytest.mark.parametrize("name", ["dummy_qwen2_vl", "dummy_llava"])
def test_asymmetric_batches_with_auto_dummy_forward_complete(accepted_runs, name):
    """Rank 0 image, rank 1 text, trainable conditional modules, run_dummy_forward: auto -> the
    step completes; gradients equal the reference where both ranks saw their real batches (the
    dummy adds exactly zero); parameters identical across ranks."""
    ranks = ok(accepted_runs, name)
    assert ranks[0]["plan"]["dummy_forward"]["vision"]["enabled"] is True
    assert_matches_reference(name, ranks)


@pytest.mark.timeout(200)
def test_frozen_tower_root_with_asymmetric_batches_completes(accepted_runs):
    """Frozen tower and projector, root, rank 0 image / rank 1 text -> completes, no dummy needed."""
    ranks = ok(accepted_runs, "frozen_root_asymmetric")
    assert ranks[0]["plan"]["dummy_forward"]["vision"]["enabled"] is False
    assert_matches_reference("frozen_root_asymmetric", ranks)


@pytest.mark.timeout(200)
def test_always_on_uniformity_check_names_ranks_instead_of_hanging(accepted_runs):
    """A false rank-uniform contract + validate_rank_uniform_execution: always -> both ranks raise
    an error naming the modality and the ranks, before any tower runs."""
    for rank in range(2):
        error = accepted_runs[("uniformity_always", rank)]["error"]
        assert "DistributedConfigError" in error
        assert "vision runs on ranks [0] but is skipped on ranks [1]" in error


@pytest.mark.timeout(120)
def test_unguarded_asymmetric_trainable_tower_fails_within_bound(tmp_path):
    """The hazard, without the validator's protection: rank 0 image, rank 1 text, the trainable
    tower its own FSDP unit, no dummy -> the step fails (collective error or abort), or hangs and
    is stopped at the process-group timeout; either way within a bound."""
    run = run_ranks(["hazard"], tmp_path, pg_timeout_s=20, deadline_s=90)
    results = [run["results"].get(("hazard", rank), {}) for rank in range(2)]
    failed = [rank for rank in range(2) if run["codes"][rank] != 0 or "error" in results[rank]]
    assert failed, f"the unguarded asymmetric step succeeded: {run}"
    assert run["seconds"] < 90
