"""What the data side declares about modality execution across ranks: the batch contract.

The data pipeline (dataset, collator or batch planner) owns this fact; the distributed policy
never infers it from dataset config, so identical distributed config keeps one meaning whatever
data it is paired with (PROPOSAL.md, section 3).

Contract: for every modality in ``rank_uniform_modalities``, every microbatch either carries that
modality on all data-parallel ranks or on none. Any other modality may be present on some ranks
and absent on others (the conservative default: mixed image/text data without a planner).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class BatchContract:
    """Which modalities the batch planner guarantees to execute rank-uniformly."""

    rank_uniform_modalities: frozenset[str] = frozenset()
    """Modalities that every rank executes in the same microbatches (all or none)."""
    declared_by: str = "default (no declaration: every modality may differ across ranks)"
    """Who declared this contract, for the `explain` output."""

    @classmethod
    def uniform(cls, modalities: Collection[str], *, declared_by: str) -> BatchContract:
        """A planner that guarantees rank-uniform execution of ``modalities``."""
        return cls(rank_uniform_modalities=frozenset(modalities), declared_by=declared_by)

    def may_differ_across_ranks(self, modality: str) -> bool:
        """True when ranks may disagree on whether ``modality`` runs in a microbatch."""
        return modality not in self.rank_uniform_modalities
