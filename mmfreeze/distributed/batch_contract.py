"""What the data side declares about modality execution across ranks: the batch contract.

The data pipeline (dataset, collator or batch planner) owns this fact; the distributed policy
never infers it from dataset config, so identical distributed config keeps one meaning whatever
data it is paired with (PROPOSAL.md, section 3).

Contract: for every modality in ``rank_uniform_modalities``, every microbatch either carries that
modality on all data-parallel ranks or on none. Any other modality may be present on some ranks
and absent on others (the conservative default: mixed image/text data without a planner).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import DistributedConfigError
from mmfreeze.reachability.mix import MIXES_KEY, parse_mixes

CONTRACT_KEY = "batch_contract"
CONTRACT_KEYS = ("rank_uniform", MIXES_KEY)
"""Where a recipe declares it: ``distributed.multimodal.batch_contract.rank_uniform: [vision]``.
It sits beside the policies it makes safe but is the data side's statement, not a policy: the
policy parser skips it, and nothing derives it from dataset settings."""


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

    def with_uniform(self, modalities: Collection[str], *, declared_by: str) -> BatchContract:
        """This contract plus ``modalities`` (a command line adding to what a recipe declares)."""
        if not modalities:
            return self
        by = declared_by if not self.rank_uniform_modalities else f"{self.declared_by}; {declared_by}"
        return BatchContract(rank_uniform_modalities=self.rank_uniform_modalities | set(modalities), declared_by=by)

    def may_differ_across_ranks(self, modality: str) -> bool:
        """True when ranks may disagree on whether ``modality`` runs in a microbatch."""
        return modality not in self.rank_uniform_modalities


def parse_batch_contract(multimodal: Mapping[str, Any], *, source: str | None = None) -> BatchContract:
    """The contract a recipe declares under ``distributed.multimodal``, or the conservative default.
    Its ``mixes`` (which inputs batches carry, for reachability) are checked here too and read by
    :func:`mmfreeze.reachability.mix.recipe_mixes`."""
    where = f"distributed.multimodal.{CONTRACT_KEY}"
    section = multimodal.get(CONTRACT_KEY)
    if section is None:
        return BatchContract()
    if not isinstance(section, Mapping) or not section or not set(section) <= set(CONTRACT_KEYS):
        raise DistributedConfigError(
            f"must be `{{rank_uniform: [modality, ...], mixes: [text, text+image, ...]}}` (either or both): the "
            f"modalities the batch planner runs on every rank in every step or on none, and the mixes of inputs "
            f"batches carry; got {section!r}", source=source, key=where,
        )
    if MIXES_KEY in section:
        parse_mixes(section[MIXES_KEY], source=source)
    modalities = section.get("rank_uniform", [])
    if not isinstance(modalities, list) or not all(isinstance(m, str) and m for m in modalities):
        raise DistributedConfigError(f"must be a list of modality names, got {modalities!r}",
                                     source=source, key=f"{where}.rank_uniform")
    return BatchContract().with_uniform(modalities, declared_by=f"recipe: {where}")
