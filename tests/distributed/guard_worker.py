"""One rank of a multi-process run of the runtime guard (gloo, CPU), driven by test_guard_runs.py.

    python guard_worker.py RANK WORLD_SIZE STORE_FILE OUT_DIR PG_TIMEOUT_S WORK_DIR SCENARIO [SCENARIO ...]

Each scenario builds the tiny Llava with real weights, freezes it with mmfreeze's runtime
(`apply_freeze_config`), shards it with FSDP2 as the multimodal policy plans, builds the
optimizer, then calls `verify_frozen_set` from WORK_DIR (where the test wrote the recipe's
snapshot) before one training step. ``OUT_DIR/<scenario>.rank<R>.json`` records the result or the
error and the seconds taken.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
from tests.distributed.launch import join_process_group
from tests.distributed.tiny_vlms import build_batch, build_tiny, resolved_modules
from tests.guard.helpers import TINY_FREEZE
from torch.distributed.device_mesh import DeviceMesh
from torch.nn.parallel import DistributedDataParallel
from torch.distributed.tensor import DTensor

from mmfreeze import verify_frozen_set
from mmfreeze.distributed import (
    BatchContract,
    apply_multimodal_fsdp,
    get_mesh_description,
    parse_multimodal_config,
    plan_multimodal_fsdp,
)
from mmfreeze.freeze.apply import apply_freeze_config

RECIPE = "recipes/tiny_llava.yaml"
TAMPERED = "model.vision_tower.encoder.layers.0.mlp.fc1.weight"
"""A frozen tower weight that one rank sets trainable after sharding (a DTensor parameter)."""


@dataclass(frozen=True)
class GuardScenario:
    unfreeze_on_rank: int | None = None
    """This rank sets :data:`TAMPERED` trainable after wrapping and building its optimizer."""
    skip_guard_on_rank: int | None = None
    """This rank never calls the guard (a rank stuck elsewhere, or crashed)."""
    peer_timeout: float = 30.0
    trained_on: tuple[int, ...] | None = None
    """The model is sharded over a mesh of these ranks only; the others train nothing (a
    distillation teacher's ranks) and never call the guard. ``None``: every rank."""
    wrap: str = "fsdp2"
    """``fsdp2`` (sharded as the multimodal policy plans), ``ddp`` (DistributedDataParallel over
    every rank) or ``none`` (each rank its own unsharded model, as on a one-rank mesh)."""


GUARD_SCENARIOS = {
    "faithful": GuardScenario(),
    # Rank 1 never calls the guard, yet rank 0 must not wait for it: it does not train this model.
    "trained_on_rank_0_only": GuardScenario(trained_on=(0,), peer_timeout=30.0),
    "ddp_one_rank_unfreezes": GuardScenario(wrap="ddp", unfreeze_on_rank=1),
    # Each rank's own model: nothing says another rank trains it, so no rank waits for another.
    "unsharded_alone": GuardScenario(wrap="none", skip_guard_on_rank=1),
    "one_rank_unfreezes": GuardScenario(unfreeze_on_rank=1),
    # Last in a run: the skipping rank's round counter stays behind the other's.
    "one_rank_skips_the_guard": GuardScenario(skip_guard_on_rank=1, peer_timeout=3.0),
}


def sharded_model(mesh) -> torch.nn.Module:
    model = build_tiny("llava")
    apply_freeze_config(model, TINY_FREEZE)
    plan = plan_multimodal_fsdp(
        model, resolved_modules(model, "llava"), config=parse_multimodal_config({}, known_modalities={"vision"}),
        contract=BatchContract.uniform(["vision"], declared_by="test"), mesh=get_mesh_description(mesh),
    )
    return apply_multimodal_fsdp(model, plan, mesh)


def wrapped_model(wrap: str, mesh) -> torch.nn.Module:
    if wrap == "fsdp2":
        return sharded_model(mesh)
    model = build_tiny("llava")
    apply_freeze_config(model, TINY_FREEZE)
    return DistributedDataParallel(model) if wrap == "ddp" else model


def run_scenario(scenario: GuardScenario, rank: int, mesh) -> dict:
    if scenario.trained_on is not None:
        mesh = DeviceMesh("cpu", list(scenario.trained_on), mesh_dim_names=("dp",))  # every rank joins its groups
        if rank not in scenario.trained_on:
            return {"trains_nothing": True}
    model = wrapped_model(scenario.wrap, mesh)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    tampered = dict((model.module if scenario.wrap == "ddp" else model).named_parameters())[TAMPERED]
    if rank == scenario.unfreeze_on_rank:
        tampered.requires_grad_(True)
    if rank == scenario.skip_guard_on_rank:
        return {"skipped": True}
    verified = verify_frozen_set(model, RECIPE, optimizer=optimizer, peer_timeout=scenario.peer_timeout)
    loss = model(**build_batch("llava", "image", seed=rank)).loss
    loss.backward()
    optimizer.step()
    return {"verified": {**asdict(verified), "snapshot": str(verified.snapshot)}, "loss": loss.item(),
            "tampered_is_dtensor": isinstance(tampered, DTensor)}


def main() -> None:
    rank, world, store_file, out_dir, timeout, work_dir = sys.argv[1:7]
    rank, mesh = join_process_group(rank, world, store_file, timeout)
    os.chdir(work_dir)  # the guard finds the snapshot the way `mmfreeze snapshot` run here would
    for name in sys.argv[7:]:
        started = time.monotonic()
        try:
            result = run_scenario(GUARD_SCENARIOS[name], rank, mesh)
        except Exception as error:  # the test asserts on what failed
            result = {"error_type": type(error).__name__, "error": str(error), "traceback": traceback.format_exc()}
        result["seconds"] = time.monotonic() - started
        with open(os.path.join(out_dir, f"{name}.rank{rank}.json"), "w") as handle:
            json.dump(result, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
