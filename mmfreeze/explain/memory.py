"""The per-rank memory section of `mmfreeze explain`, as plain data (the CLI renders it).

Computed only when a world size is known (``--world-size``, ``[tool.mmfreeze] world_size``, or the
recipe's distributed sizes): the corpus check never computes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mmfreeze.memory.errors import MemoryModelError
from mmfreeze.memory.recipe import WorldSize, recipe_memory

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.memory.model import MemoryEstimate
    from mmfreeze.models.loader import LoadedStructure
    from mmfreeze.recipes.recipe import Recipe

SCOPE = ("parameters, gradients and optimizer states per rank, as the storages FSDP2 and the optimizer "
         "allocate; activations, buffers and allocator overhead are out of scope")


def explain_memory(
    recipe: Recipe, frozen: FrozenSetResult, world: WorldSize | None, loaded: LoadedStructure,
) -> dict[str, Any] | None:
    """The `memory` section: ``{"world_size": N, "ranks": [{"rank", "parameters", "gradients", "optimizer"}]}``
    in bytes, with how it was sized; ``None`` with no world size known. A world size asked for on the
    command line makes a refusal an input error; one taken from a default only says why there is no figure."""
    if world is None:
        return None
    try:
        estimate = recipe_memory(recipe, frozen, world_size=world.ranks, config=loaded.source.config)
    except MemoryModelError as error:
        if world.source == "--world-size":
            raise
        return {"world_size": world.ranks, "world_size_source": world.source, "error": str(error)}
    return memory_section(estimate, world)


def memory_section(estimate: MemoryEstimate, world: WorldSize) -> dict[str, Any]:
    peak = estimate.all_gather_peak
    return {
        "world_size": estimate.world_size,
        "world_size_source": world.source,
        "ranks": [{"rank": r.rank, "parameters": r.parameters, "gradients": r.gradients, "optimizer": r.optimizer}
                  for r in estimate.ranks],
        "optimizer_class": estimate.optimizer,
        "fsdp_units": estimate.units,
        "gradient_buffers": estimate.gradient_buffers,
        "replicated_tensors": estimate.replicated_tensors,
        "all_gather_peak": None if peak is None else {
            "unit": peak.unit, "bytes": peak.bytes, "dtype": peak.dtype,
            "what": "transient: the largest FSDP unit's parameters all-gathered (unsharded) during its forward "
                    "and backward, freed after; not held between steps"},
        "scope": SCOPE,
    }
