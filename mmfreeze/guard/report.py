"""What a guard call found: this rank's check, every rank's verdicts, and the success result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mmfreeze.guard.compare import FrozenSetDifference
from mmfreeze.guard.optimizer import OptimizerFindings
from mmfreeze.guard.ranks import RankReport


@dataclass(frozen=True, kw_only=True)
class LocalCheck:
    """This rank's live model (and optimizer) against the snapshot."""

    recipe: str
    snapshot: Path
    difference: FrozenSetDifference
    optimizer: OptimizerFindings | None
    """``None`` when no optimizer was given."""
    snapshot_transformers: str
    """The transformers release the snapshot's module tree came from (its header)."""
    missing_gradients: tuple[str, ...] | None = None
    """Trainable parameters without a gradient; ``None`` when gradients were not checked."""

    @property
    def ok(self) -> bool:
        return self.difference.empty and (self.optimizer is None or self.optimizer.ok) and not self.missing_gradients


@dataclass(frozen=True, kw_only=True)
class GuardReport:
    """Everything one call found; carried by :class:`~mmfreeze.exceptions.FrozenSetMismatchError`."""

    local: LocalCheck
    rank: int | None
    """This process's rank, ``None`` outside a process group."""
    world_size: int
    ranks: RankReport | None
    """Every rank's verdict; ``None`` when this rank was checked alone."""

    @property
    def ok(self) -> bool:
        return self.local.ok and (self.ranks is None or self.ranks.all_agree)


@dataclass(frozen=True, kw_only=True)
class VerifiedFrozenSet:
    """What a passing :func:`~mmfreeze.verify_frozen_set` call checked."""

    recipe: str
    snapshot: Path
    tensors: int
    frozen_tensors: int
    trainable_tensors: int
    optimizer_checked: bool
    gradients_checked: bool = False
    rank: int | None
    world_size: int
    ranks_compared: bool
    """Every rank's verdict was read and all agree (``False``: this rank was checked alone)."""
