"""FSDP2's dim-0 sharding of one parameter over ``world`` ranks, as element counts; and the slice
tensor parallelism leaves each rank before FSDP2 shards it.

``torch/distributed/fsdp/_fully_shard/_fsdp_param.py`` (``FSDPParam._init_sharded_param``):
the parameter is split with ``torch.chunk(dim=0)``, so every rank's chunk has
``ceil(dim0 / world)`` rows except the last ones, which may be shorter or empty. Each rank
allocates the *padded* chunk (``new_zeros(chunks[0].size())``, kept as ``_sharded_param_data``)
and its ``DTensor`` views the first rows of it: the parameter's storage is padded on every rank,
its local tensor is not.
"""

from __future__ import annotations

from math import prod


def chunk_rows(dim0: int, world: int) -> int:
    """Rows of the padded chunk every rank allocates: ``torch.chunk``'s chunk size."""
    return -(-dim0 // world)


def padded_shard_numel(shape: tuple[int, ...], world: int) -> int:
    """Elements of a rank's padded shard storage (the same on every rank)."""
    return chunk_rows(shape[0], world) * prod(shape[1:])


def chunk_length(length: int, parts: int, index: int) -> int:
    """The length of ``index``'s chunk when ``torch.chunk`` splits ``length`` into ``parts``: the last
    ones may be shorter, or empty."""
    rows = chunk_rows(length, parts)
    return min(rows, max(0, length - index * rows))


def local_shard_numel(shape: tuple[int, ...], world: int, rank: int) -> int:
    """Elements of ``rank``'s local tensor (unpadded: the last ranks may hold fewer rows, or none)."""
    return chunk_length(shape[0], world, rank) * prod(shape[1:])


def tensor_parallel_slice(shape: tuple[int, ...], dim: int | None, tp: int, tp_rank: int) -> tuple[int, ...]:
    """The shape of ``tp_rank``'s slice of a parameter tensor parallelism splits on ``dim`` over ``tp``
    ranks (``None``: whole): a DTensor ``Shard(dim)`` splits as ``torch.chunk`` does, so the first ranks may
    hold one more row than the last. Under FSDP2 this slice is what is sharded on its dim 0
    (``FSDPParam._init_sharded_param`` chunks the DTensor's local tensor)."""
    if dim is None or tp == 1:
        return shape
    return (*shape[:dim], chunk_length(shape[dim], tp, tp_rank), *shape[dim + 1:])
