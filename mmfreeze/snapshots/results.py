"""What a snapshot run found, per recipe and per orphaned snapshot (plain data, JSON-ready)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from mmfreeze.distributed.native import NativeSupport
from mmfreeze.snapshots.diff import RecipeChange

if TYPE_CHECKING:
    from mmfreeze.memory.change import ChangeCost  # sized only for a changed recipe, where it is shown

Status = Literal["passed", "changed", "builder_switch", "probe_only", "renamed", "version_only", "missing", "written",
                 "updated", "input_error"]
"""``builder_switch``: this environment builds another class than the one the snapshot describes
(the framework's own class against transformers', or the reverse): the snapshot can be checked only
where it was made, and its message says which classes (:func:`~mmfreeze.snapshots.check.builder_switch`);
``version_only``: changed in the release its header names and nothing else
(:attr:`~mmfreeze.snapshots.diff.RecipeChange.version_only`); ``renamed``: that, and the release
renamed tensors, each as trainable as before (:attr:`~mmfreeze.snapshots.diff.RecipeChange.renamed_only`);
``probe_only``: either, and the release changed how a mix was probed for reachability
(:attr:`~mmfreeze.snapshots.diff.RecipeChange.probe_only`);
``written``: a missing snapshot was stored; ``updated``: a changed one was accepted (its file now
has the current names)."""
RELEASE_ONLY: tuple[Status, ...] = ("probe_only", "renamed", "version_only")
"""Differences in the release that made a snapshot alone (no tensor's trainability, adapter or
rate moved), in report order: a report collapses each into one line."""


@dataclass(frozen=True, kw_only=True)
class RecipeOutcome:
    recipe: str
    """Recipe path relative to the run's root."""
    snapshot: str
    """Snapshot path relative to the run's root."""
    status: Status
    message: str | None = None
    """Why: the input error, or why no detailed change could be computed."""
    change: RecipeChange | None = None
    """For ``changed``, ``probe_only``, ``renamed``, ``version_only`` and ``updated``: what moved."""
    nemo_automodel: NativeSupport | None = None
    """Whether nemo-automodel 0.7 runs the recipe natively or needs ``mmfreeze.nemo``, and which keys
    decide it; ``None`` when the recipe could not be read."""
    cost: ChangeCost | None = None
    """For ``changed``: what the change costs per rank, whole and per group that moved (or why it
    cannot be sized)."""


@dataclass(frozen=True, kw_only=True)
class Orphan:
    snapshot: str
    recipe: str
    """The recipe path the snapshot belongs to, which no longer exists."""
    deleted: bool
    delete_error: str | None = None
    """Why ``--update`` could not delete it (the system's words): a failed write, which fails the run."""


@dataclass(kw_only=True)
class SnapshotRunResult:
    """Filled in by one run (:func:`mmfreeze.snapshots.check.run_check`)."""

    outcomes: list[RecipeOutcome] = field(default_factory=list)
    orphans: list[Orphan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Problems that cost time but not correctness (a cache that could not be written)."""
    missing_configs: dict[str, list[str]] = field(default_factory=dict)
    """Model id -> the recipes (keys) whose model has a config nowhere: summarised once per run."""
    interrupted: bool = False
    """SIGINT stopped the run: the outcomes are not every recipe's."""

    def with_status(self, *statuses: Status) -> list[RecipeOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status in statuses]


def unchecked_outcome(recipe: str, snapshot: str, reason: str | None) -> RecipeOutcome:
    """The input error of a recipe the run found and could not read as a file (``reason``: why, when known)."""
    why = f": {reason}" if reason else ""
    return RecipeOutcome(recipe=recipe, snapshot=snapshot, status="input_error", message=f"{recipe}: was not checked{why}")
