"""The multi-process scenarios: model, what is trainable, each rank's batch, the policy section.

Shared by the worker (one rank) and the tests (single-process references and assertions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from tests.distributed.tiny_vlms import SPECS, build_batch, build_tiny


@dataclass(frozen=True)
class Scenario:
    arch: str
    trainable_roles: tuple[str, ...]
    """Vision roles left trainable; the other vision modules are frozen (the LM always trains)."""
    batches: tuple[str, str]
    """Batch kind on rank 0 and rank 1."""
    section: dict[str, Any] = field(default_factory=dict)
    """The recipe's `distributed.multimodal` mapping."""
    uniform_contract: bool = False
    guarded: bool = True
    """Install the uniformity check and dummy forward (False reproduces the unguarded hazard)."""


SCENARIOS = {
    **{
        f"uniform_{strategy}": Scenario(
            "llava", ("projector",), ("image", "image"), {"frozen_sharding": strategy}, uniform_contract=True
        )
        for strategy in ("root", "per_layer", "replicate")
    },
    "dummy_qwen2_vl": Scenario("qwen2_vl", ("tower", "projector"), ("image", "text")),
    "dummy_llava": Scenario("llava", ("projector",), ("image", "text")),
    "frozen_root_asymmetric": Scenario("llava", (), ("image", "text")),
    # The validator is told execution is rank-uniform (a false contract) and nothing guards the
    # run: the trainable tower is its own FSDP unit that only rank 0 enters.
    "hazard": Scenario("qwen2_vl", ("tower", "projector"), ("image", "text"), uniform_contract=True, guarded=False),
    "uniformity_always": Scenario(
        "llava", (), ("image", "text"), {"validate_rank_uniform_execution": "always"}, uniform_contract=True
    ),
}


def build_model(scenario: Scenario) -> torch.nn.Module:
    """The scenario's tiny model with its vision modules frozen or trainable (parents first)."""
    model = build_tiny(scenario.arch)
    for spec in SPECS[scenario.arch]:
        model.get_submodule(spec.path).requires_grad_(spec.role in scenario.trainable_roles)
    return model


def reference_step(scenario: Scenario, *, lr: float) -> dict[str, Any]:
    """Single process, no FSDP, no dummy: the mean of both ranks' real losses, one SGD step."""
    model = build_model(scenario)
    losses = [model(**build_batch(scenario.arch, kind, seed=rank)).loss for rank, kind in enumerate(scenario.batches)]
    (sum(losses) / len(losses)).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    return {"losses": [loss.item() for loss in losses], "grads": grads, "params": params}
