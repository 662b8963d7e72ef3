"""Apply an accepted plan with PyTorch FSDP2 (``fully_shard`` on a ``DeviceMesh``), in place.

Fixed order (torchtitan `distributed/fsdp.py`): the plan's units are already submodules first and
the root last; the mesh and the ignored (replicated) parameters are built once and passed to every
call, so no enclosing unit can capture a replicated parameter.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mmfreeze.distributed.plan import MultimodalFsdpPlan

if TYPE_CHECKING:
    from torch import nn
    from torch.distributed.device_mesh import DeviceMesh

logger = logging.getLogger(__name__)


def apply_multimodal_fsdp(model: nn.Module, plan: MultimodalFsdpPlan, mesh: DeviceMesh) -> nn.Module:
    """Shard ``model`` (materialised on the mesh's device) as ``plan`` says; returns ``model``."""
    from torch.distributed.fsdp import fully_shard

    fsdp_mesh = mesh[plan.mesh.fsdp_dim] if mesh.ndim > 1 else mesh
    # Replicated = frozen modules kept out of FSDP: full tensors on every rank, never reduced.
    ignored = {
        p for path in plan.replicated for p in model.get_submodule(path).parameters() if not p.requires_grad
    }
    for unit in plan.units:
        fully_shard(model.get_submodule(unit.path), mesh=fsdp_mesh, ignored_params=ignored or None)
    logger.info(
        "FSDP2 applied: %d units (%d before root), %d modules root-owned, %d replicated (%d params ignored)",
        len(plan.units), len(plan.units) - 1, len(plan.root_owned), len(plan.replicated), len(ignored),
    )
    return model
