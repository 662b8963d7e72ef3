"""One rank of a multi-process FSDP2 run (gloo, CPU), driven by test_fsdp_runs.py.

    python fsdp_worker.py RANK WORLD_SIZE STORE_FILE OUT_DIR PG_TIMEOUT_S SCENARIO [SCENARIO ...]

Each scenario builds its model, plans, applies FSDP2 and the hooks, runs one SGD step and saves
``OUT_DIR/<scenario>.rank<R>.pt`` with the loss, full gradients, full parameters and how each
parameter is held locally; an exception is saved as the result instead.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
from tests.distributed.launch import join_process_group
from tests.distributed.scenarios import SCENARIOS, Scenario, build_model
from tests.distributed.tiny_vlms import build_batch, resolved_modules
from torch.distributed.tensor import DTensor

from mmfreeze.distributed import (
    BatchContract,
    apply_dummy_forward,
    apply_multimodal_fsdp,
    apply_uniformity_check,
    get_mesh_description,
    parse_multimodal_config,
    plan_multimodal_fsdp,
)

LR = 0.1


def run_scenario(scenario: Scenario, rank: int, mesh) -> dict:
    model = build_model(scenario)
    contract = BatchContract.uniform(["vision"], declared_by="test") if scenario.uniform_contract else BatchContract()
    plan = plan_multimodal_fsdp(
        model,
        resolved_modules(model, scenario.arch),
        config=parse_multimodal_config(scenario.section, known_modalities={"vision"}),
        contract=contract,
        mesh=get_mesh_description(mesh),
    )
    apply_multimodal_fsdp(model, plan, mesh)
    if scenario.guarded:
        apply_uniformity_check(model, plan)
        apply_dummy_forward(model, plan)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=LR)
    loss = model(**build_batch(scenario.arch, scenario.batches[rank], seed=rank)).loss
    loss.backward()
    grads = {name: _full(p.grad) for name, p in model.named_parameters() if p.grad is not None}
    optimizer.step()
    return {
        "loss": loss.item(),
        "grads": grads,
        "params": {name: _full(p.detach()) for name, p in model.named_parameters()},
        "local": {name: (type(p.data).__name__, tuple(_local(p).shape)) for name, p in model.named_parameters()},
        "plan": plan.describe(),
    }


def _full(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor.clone()


def _local(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def main() -> None:
    rank, world, store_file, out_dir, timeout = sys.argv[1:6]
    rank, mesh = join_process_group(rank, world, store_file, timeout)
    for name in sys.argv[6:]:
        started = time.monotonic()
        try:
            result = run_scenario(SCENARIOS[name], rank, mesh)
        except Exception as error:  # the test asserts on what failed
            result = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
        result["seconds"] = time.monotonic() - started
        torch.save(result, os.path.join(out_dir, f"{name}.rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
