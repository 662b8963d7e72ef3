"""Per-rank bytes of parameters, gradients and optimizer states, counted as the storages a run allocates.

Inputs are plain data (:class:`MemoryInputs`); :func:`estimate_memory` is pure. The rules (FSDP2 of
torch 2.14, ``torch/distributed/fsdp/_fully_shard``; written out in ``docs/memory.md``):

- **Parameters.** A sharded parameter's storage is its padded chunk (:mod:`mmfreeze.memory.shards`),
  the same on every rank; a replicated one is whole on every rank; a tied weight is one storage.
- **Gradients.** ``foreach_reduce`` (``_fsdp_collectives.py``) reduce-scatters a unit's gradients into
  one flat output of the padded shards of its parameters that have a gradient, cast once to the
  parameters' dtype (uniform across a unit's trainable parameters, or FSDP refuses); every sharded
  ``.grad`` is a view of it. So each unit with trainable parameters holds one gradient storage of
  ``sum(padded shard) x itemsize``, the same on every rank. Frozen parameters have none.
- **Optimizer.** Per trainable parameter, ``moments`` tensors of its *local* (unpadded) shard in its
  dtype, plus its 0-dim float32 scalars such as ``step`` (:mod:`mmfreeze.memory.optimizer`): the only
  figure that differs between ranks, when a parameter's rows do not divide by the world size.
- **Tensor parallelism** (``tp_size`` above 1): the mesh is ``dp x tp``, ``tp`` innermost, so rank ``r`` is
  tensor-parallel rank ``r % tp`` and data-parallel rank ``r // tp``. Each parameter the framework's plan
  splits is first cut to that tensor-parallel rank's slice (:func:`~mmfreeze.memory.shards.tensor_parallel_slice`),
  and everything above applies to the slice over the ``world / tp`` data-parallel ranks. An uneven split
  (a vocabulary of 131 rows over 2 ranks) makes every figure differ between ranks.
- **Context parallelism** (``cp_size`` above 1): FSDP2 shards over the flattened ``dp_shard x cp`` mesh, which
  is the ``world / tp`` ranks above, in the same order; nothing else here changes (the callers check which
  layouts were measured).

- **Expert parallelism** (``ep_size`` above 1): rank ``r`` is expert-parallel rank ``r % ep`` of the
  ``ep_shard x ep`` mesh. Each expert parameter is first cut to that rank's experts (``Shard(0)``, an
  even split: the framework requires it); over ``ep_shard`` ranks above 1 FSDP2 shards that slice on its
  dim 1 (padded like dim 0), else it holds the slice whole, with a gradient of its own of the same size.

It assumes every trainable parameter gets a gradient in every step (the loss reaches it: see
`mmfreeze explain`'s reachability). Activations, buffers, the optimizer's Python objects and the
allocator's rounding are out of scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from math import prod

from mmfreeze.memory.dtypes import ELEMENT_BYTES
from mmfreeze.memory.errors import MemoryModelError, UndividableLayoutError
from mmfreeze.memory.layout import FsdpLayout, MoeModel
from mmfreeze.memory.optimizer import OptimizerState
from mmfreeze.memory.shards import local_shard_numel, padded_shard_numel, tensor_parallel_slice
from mmfreeze.models.structure import ModelStructure

ALL_GATHER_DTYPE = "bfloat16"
"""The compute dtype of nemo-automodel 0.7.0's default ``MixedPrecisionPolicy`` (``param_dtype``,
``parallelizer.py`` ``_apply``): what FSDP2 all-gathers a unit's parameters into."""


@dataclass(frozen=True, kw_only=True)
class ExpertParallel:
    """How expert parallelism splits a model's expert parameters."""

    size: int
    """``ep_size``: the ranks each expert parameter's experts are split over."""
    shard: int
    """The ``ep_shard`` ranks FSDP2 shards each slice over (1: not at all)."""
    model: MoeModel
    """Where the MoE parallelizer finds the experts, and the rest of the model it wraps."""

    @property
    def parameters(self) -> frozenset[str]:
        return self.model.expert_parameters


@dataclass(frozen=True, kw_only=True)
class MemoryInputs:
    """Everything the memory model reads, as the framework would run the recipe."""

    structure: ModelStructure
    """The trained structure (LoRA adapters injected)."""
    frozen: frozenset[str]
    dtypes: Mapping[str, str]
    """Canonical parameter name -> the dtype it is stored in (``bfloat16``)."""
    layout: FsdpLayout
    optimizer: OptimizerState
    world_size: int
    tp_size: int = 1
    tp_dims: Mapping[str, int] = field(default_factory=dict)
    """Canonical parameter name -> the dim the framework's tensor-parallel plan splits it on; a parameter
    absent is whole on every tensor-parallel rank."""
    expert_parallel: ExpertParallel | None = None
    teacher: MemoryInputs | None = None
    """A distillation recipe's teacher, frozen whole on the same ranks: its parameters count on each rank."""
    forward_only: bool = False
    """The model only runs forward (a teacher): its ``gathered`` units stay all-gathered, held beside their shards."""


@dataclass(frozen=True, kw_only=True)
class RankMemory:
    """What one rank holds, in bytes (activations out of scope)."""

    rank: int
    parameters: int
    gradients: int
    optimizer: int


@dataclass(frozen=True, kw_only=True)
class AllGatherPeak:
    """The largest FSDP unit, unsharded: a transient buffer during its forward and backward, not held."""

    unit: str
    """The unit's module path (``""``: the root)."""
    bytes: int
    dtype: str


@dataclass(frozen=True, kw_only=True)
class MemoryEstimate:
    """Per-rank memory of one recipe at one world size."""

    world_size: int
    ranks: tuple[RankMemory, ...]
    all_gather_peak: AllGatherPeak | None
    units: int
    """FSDP2 units (the root included)."""
    gradient_buffers: int
    """Gradient storages: one per unit with a trainable parameter (the reduce-scatter output its ``.grad``s are
    views of), and one per trainable expert parameter FSDP2 leaves to expert parallelism (its own ``.grad``)."""
    replicated_tensors: int
    optimizer: str
    teacher: MemoryEstimate | None = None
    """The teacher's own figures (parameters only), already counted in :attr:`ranks`."""


def estimate_memory(inputs: MemoryInputs) -> MemoryEstimate:
    """Per-rank bytes of ``inputs``' recipe at ``inputs.world_size`` ranks."""
    world, tp = inputs.world_size, inputs.tp_size
    if world < 1:
        raise UndividableLayoutError(f"must be a positive number of ranks, got {world}", key="world_size")
    dp = world // tp
    infos = {info.name: info for info in inputs.structure.parameters}
    scalars = [name for name, info in infos.items() if not info.shape]
    if scalars:
        raise MemoryModelError(f"{scalars[0]} is 0-dimensional: FSDP2 shards dim 0, mmfreeze does not size it",
                               key="model")
    replicated = inputs.layout.replicated
    trainable = [name for name in infos if name not in inputs.frozen]

    def size(name: str) -> int:
        return ELEMENT_BYTES[inputs.dtypes[name]]

    # Each parameter as each tensor-parallel rank holds it, before FSDP2 shards it ...
    held = [{name: tensor_parallel_slice(info.shape, inputs.tp_dims.get(name), tp, tp_rank)
             for name, info in infos.items()} for tp_rank in range(tp)]
    experts = inputs.expert_parallel
    expert_names = experts.parameters if experts else frozenset()
    if experts is not None:  # ... or by each expert-parallel rank (tp_size is then 1): rank r holds held[r % ep]
        held = [_expert_slices(held[0], experts, ep_rank) for ep_rank in range(experts.size)]

    def stored(name: str, shapes: Mapping[str, tuple[int, ...]]) -> int:
        """Elements of a rank's storage of ``name``: its padded shard, or whole where FSDP2 leaves it out."""
        return prod(shapes[name]) if name in replicated else _sharded(name, shapes, dp, experts)[0]

    def local(name: str, shapes: Mapping[str, tuple[int, ...]], rank: int) -> int:
        """Elements of ``rank``'s own part of ``name`` (unpadded): what its optimizer states are sized by."""
        if name in expert_names:
            return local_shard_numel(_dim1_first(shapes[name]), experts.shard, rank // experts.size)
        return local_shard_numel(shapes[name], dp, rank // tp)

    def figures(rank: int) -> RankMemory:
        shapes = held[rank % len(held)]
        parameters = sum(stored(name, shapes) * size(name) for name in infos)
        if inputs.forward_only:  # never backward, so never resharded: each gathered unit's all-gather output stays
            parameters += sum(_gathered_numel(unit.parameters, shapes, dp, experts) * ELEMENT_BYTES[ALL_GATHER_DTYPE]
                              for unit in inputs.layout.units if unit.gathered)
        return RankMemory(
            rank=rank, parameters=parameters + (teacher.ranks[rank].parameters if teacher else 0),
            gradients=sum(stored(name, shapes) * size(name) for name in trainable if name not in replicated),
            optimizer=sum(state.moments * local(name, shapes, rank) * size(name) + state.scalar_bytes
                          for name in trainable))

    state = inputs.optimizer
    teacher = None if inputs.teacher is None else estimate_memory(inputs.teacher)
    ranks = tuple(figures(rank) for rank in range(world))
    return MemoryEstimate(world_size=world, ranks=ranks, all_gather_peak=_peak(inputs, held[0], dp),
                          units=len(inputs.layout.units), replicated_tensors=len(replicated),
                          gradient_buffers=sum(any(name not in inputs.frozen for name in unit.parameters)
                                               for unit in inputs.layout.units)
                          + (sum(name not in inputs.frozen for name in expert_names) if experts and experts.shard == 1
                             else 0),
                          optimizer=state.name, teacher=teacher)


def _expert_slices(shapes: Mapping[str, tuple[int, ...]], experts: ExpertParallel,
                   ep_rank: int) -> dict[str, tuple[int, ...]]:
    """``shapes`` with each expert parameter cut to ``ep_rank``'s experts (``Shard(0)`` over ``ep_size``)."""
    return {name: tensor_parallel_slice(shape, 0, experts.size, ep_rank) if name in experts.parameters else shape
            for name, shape in shapes.items()}


def _dim1_first(shape: tuple[int, ...]) -> tuple[int, ...]:
    """An expert slice as FSDP2 shards it (``_moe_shard_placement``: dim 1, dim 0 for a vector), dim 0 first."""
    return shape if len(shape) < 2 else (shape[1], shape[0], *shape[2:])


def _sharded(name: str, shapes: Mapping[str, tuple[int, ...]], dp: int,
             experts: ExpertParallel | None) -> tuple[int, int]:
    """A rank's padded shard of ``name``, in elements, and the ranks that shard it: the data-parallel ranks, or
    an expert slice's ``ep_shard`` ranks, on its dim 1 (one rank: the slice whole)."""
    if experts is not None and name in experts.parameters:
        return padded_shard_numel(_dim1_first(shapes[name]), experts.shard), experts.shard
    return padded_shard_numel(shapes[name], dp), dp


def _gathered_numel(names: Iterable[str], shapes: Mapping[str, tuple[int, ...]], dp: int,
                    experts: ExpertParallel | None) -> int:
    """A unit's all-gather output, in elements: its parameters' padded shards from every rank that shards them."""
    return sum(shard * ranks for shard, ranks in (_sharded(name, shapes, dp, experts) for name in names))


def _peak(inputs: MemoryInputs, shapes: Mapping[str, tuple[int, ...]], dp: int) -> AllGatherPeak | None:
    """The largest unit's all-gather output: its padded parameters, whole over the data-parallel ranks (the
    first tensor-parallel rank's slices, the largest), in the compute dtype."""
    sizes = [(_gathered_numel(unit.parameters, shapes, dp, inputs.expert_parallel), unit.path)
             for unit in inputs.layout.units if unit.parameters]
    if not sizes:
        return None
    numel, path = max(sizes, key=lambda item: item[0])
    return AllGatherPeak(unit=path, bytes=numel * ELEMENT_BYTES[ALL_GATHER_DTYPE], dtype=ALL_GATHER_DTYPE)
