"""The per-rank memory section of `mmfreeze explain`, as plain data (the CLI renders it).

Computed only when a world size is known (``--world-size``, ``[tool.mmfreeze] world_size``, or the
recipe's distributed sizes): the corpus check never computes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.memory.recipe import Teacher, WorldSize, recipe_memory

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.memory.model import MemoryEstimate
    from mmfreeze.models.loader import LoadedStructure
    from mmfreeze.recipes.recipe import Recipe

SCOPE = ("parameters, gradients and optimizer states per rank, as the storages FSDP2 and the optimizer "
         "allocate; activations, buffers and allocator overhead are out of scope")


def explain_memory(
    recipe: Recipe, frozen: FrozenSetResult, world: WorldSize | None, loaded: LoadedStructure,
    teacher: Callable[[], Teacher | None] = lambda: None,
) -> dict[str, Any] | None:
    """The `memory` section: ``{"world_size": N, "ranks": [{"rank", "parameters", "gradients", "optimizer"}]}``
    in bytes, with how it was sized; ``None`` with no world size known. A world size asked for on the
    command line makes a refusal an input error; one taken from a default only says why there is no figure.
    ``teacher``: builds a distillation recipe's teacher, asked only where a figure is made."""
    if world is None:
        return None
    try:
        estimate = recipe_memory(recipe, frozen, world_size=world.ranks, loaded=loaded,
                                 teacher=teacher())
    except MmfreezeError as error:  # a refusal, or a teacher that cannot be built
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
        **({} if estimate.teacher is None else {"teacher": teacher_section(estimate.teacher)}),
        "scope": SCOPE,
    }


def teacher_section(teacher: MemoryEstimate) -> dict[str, Any]:
    """A distillation teacher's own figures (only a distillation recipe's section has them)."""
    peak = teacher.all_gather_peak
    return {
        "parameters": [rank.parameters for rank in teacher.ranks],
        "fsdp_units": teacher.units,
        "all_gather_peak": None if peak is None else {"unit": peak.unit, "bytes": peak.bytes},
        "what": "the distillation teacher, frozen whole on the same ranks: parameters only, counted in each "
                "rank's parameters",
    }
