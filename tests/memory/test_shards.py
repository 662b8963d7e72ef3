"""FSDP2's dim-0 chunks, checked against torch.chunk itself (the rule the model states)."""

from __future__ import annotations

import pytest
import torch

from mmfreeze.memory.shards import chunk_rows, local_shard_numel, padded_shard_numel


@pytest.mark.parametrize("dim0", [1, 2, 5, 7, 8, 131])
@pytest.mark.parametrize("world", [2, 3, 4, 8])
def test_local_and_padded_shards_are_torch_chunks(dim0: int, world: int) -> None:
    """Rank r holds torch.chunk's r-th piece (none past the last); every rank pads to the first piece."""
    chunks = torch.chunk(torch.empty(dim0, 3), world, dim=0)
    for rank in range(world):
        held = chunks[rank].numel() if rank < len(chunks) else 0
        assert local_shard_numel((dim0, 3), world, rank) == held
        assert padded_shard_numel((dim0, 3), world) == chunks[0].numel()
    assert chunk_rows(dim0, world) == chunks[0].shape[0]


def test_uneven_rows_leave_the_last_ranks_short_or_empty() -> None:
    assert [local_shard_numel((5,), 4, rank) for rank in range(4)] == [2, 2, 1, 0]
    assert padded_shard_numel((5,), 4) == 2
