"""FSDP2's dim-0 sharding of one parameter over ``world`` ranks, as element counts.

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


def local_shard_numel(shape: tuple[int, ...], world: int, rank: int) -> int:
    """Elements of ``rank``'s local tensor (unpadded: the last ranks may hold fewer rows, or none)."""
    rows = chunk_rows(shape[0], world)
    held = min(rows, max(0, shape[0] - rank * rows))
    return held * prod(shape[1:])
