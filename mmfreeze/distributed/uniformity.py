"""The optional runtime check that every rank executes the same modalities in a microbatch.

It runs as a forward pre-hook on the model root, an always-executed boundary before any
conditional tower: a hook inside a tower would deadlock, because skipping ranks never enter it.
A bounded check (first N microbatches) is diagnostic only; `always` turns every would-be hang
into an error that names the ranks and modalities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mmfreeze.distributed.config import CONFIG_KEY
from mmfreeze.distributed.dummy_forward import get_executed_modalities
from mmfreeze.distributed.plan import MultimodalFsdpPlan
from mmfreeze.exceptions import DistributedConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.distributed import ProcessGroup
    from torch.utils.hooks import RemovableHandle


def check_rank_uniform_execution(
    executed: frozenset[str],
    modalities: Sequence[str],
    *,
    device: torch.device,
    group: ProcessGroup | None = None,
    step: int | None = None,
) -> None:
    """All ranks exchange which of ``modalities`` they execute; raise on any disagreement.

    Collective: every rank of ``group`` must call it at the same point.
    """
    import torch
    import torch.distributed as dist

    vector = torch.tensor([modality in executed for modality in modalities], dtype=torch.int32, device=device)
    gathered = [torch.empty_like(vector) for _ in range(dist.get_world_size(group))]
    dist.all_gather(gathered, vector, group=group)
    ranks = dist.get_process_group_ranks(group or dist.group.WORLD)
    problems = []
    for index, modality in enumerate(modalities):
        running = [rank for rank, row in zip(ranks, gathered) if row[index]]
        if 0 < len(running) < len(ranks):
            skipping = [rank for rank in ranks if rank not in running]
            problems.append(f"{modality} runs on ranks {running} but is skipped on ranks {skipping}")
    if problems:
        where = f"microbatch {step}" if step is not None else "this microbatch"
        raise DistributedConfigError(
            f"rank-asymmetric modality execution at {where}: {'; '.join(problems)}. The batch contract "
            "or the dummy forward must make execution uniform for these modalities",
            key=f"{CONFIG_KEY}.validate_rank_uniform_execution",
        )


def apply_uniformity_check(
    model: nn.Module, plan: MultimodalFsdpPlan, *, group: ProcessGroup | None = None
) -> RemovableHandle | None:
    """Install the check on the root forward for the planned number of microbatches (or always)."""
    limit = plan.uniformity_check
    if limit is False:
        return None
    modalities = sorted({m.modality for m in plan.modules})
    calls = 0

    def check(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        if limit == "always" or calls <= limit:
            device = next(v.device for v in (*args, *kwargs.values()) if hasattr(v, "device"))
            executed = get_executed_modalities(model, kwargs)
            check_rank_uniform_execution(executed, modalities, device=device, group=group, step=calls)

    # Registered before the dummy-forward hook (call this first) so the check sees the real inputs.
    return model.register_forward_pre_hook(check, with_kwargs=True)
