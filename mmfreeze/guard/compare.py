"""A live model's frozen set against the accepted snapshot's (pure set algebra on names).

A snapshot stores the frozen names and the number of frozen and trainable tensors. So a frozen
name is checked by name both ways, and a trainable tensor that was added or removed shows as a
different tensor count (it cannot be named: the snapshot does not list trainable names).
"""

from __future__ import annotations

from dataclasses import dataclass

from mmfreeze.guard.live import LiveModel
from mmfreeze.snapshots.format import Snapshot


@dataclass(frozen=True, kw_only=True)
class FrozenSetDifference:
    """What differs between one rank's live model and the snapshot; empty when nothing does."""

    newly_frozen: tuple[str, ...]
    """Frozen in the model, not in the snapshot's frozen set."""
    newly_trainable: tuple[str, ...]
    """In the snapshot's frozen set, trainable in the model."""
    missing: tuple[str, ...]
    """In the snapshot's frozen set, no such parameter in the model."""
    model_tensors: int
    snapshot_tensors: int
    """Frozen plus trainable tensors of the snapshot's model (its header)."""
    stage: bool = False
    """The model is one pipeline stage: the snapshot's other names live on other ranks."""

    @property
    def tensor_count_differs(self) -> bool:
        return not self.stage and self.model_tensors != self.snapshot_tensors

    @property
    def empty(self) -> bool:
        return not (self.newly_frozen or self.newly_trainable or self.missing or self.tensor_count_differs)


def compare_with_snapshot(live: LiveModel, snapshot: Snapshot, *, stage: bool = False) -> FrozenSetDifference:
    """``stage``: ``live`` is one pipeline stage, checked against the snapshot names it holds."""
    stored = snapshot.frozen
    present = live.numel.keys()
    header = snapshot.header
    return FrozenSetDifference(
        newly_frozen=tuple(sorted(live.frozen - stored)),
        newly_trainable=tuple(sorted(name for name in stored if name in present and name not in live.frozen)),
        missing=() if stage else tuple(sorted(name for name in stored if name not in present)),
        model_tensors=len(live.names),
        snapshot_tensors=header.frozen_tensors + header.trainable_tensors,
        stage=stage,
    )
