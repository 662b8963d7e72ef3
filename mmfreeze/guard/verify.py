"""`verify_frozen_set`: hold a live model, and its optimizer, against the recipe's accepted snapshot.

Call it once the model is fully set up (PEFT, checkpoint loading, FSDP2, ``torch.compile``) and
before the first step, on every rank. It reads names, flags and shapes only, so it costs
milliseconds on a meta-device 7B model and allocates no parameter memory; on the success path it
imports nothing beyond mmfreeze's own pure modules (torch is already loaded by the model).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import FrozenSetMismatchError, MmfreezeError
from mmfreeze.guard.compare import compare_with_snapshot
from mmfreeze.guard.gradients import missing_gradients
from mmfreeze.guard.live import LiveModel, read_live_model
from mmfreeze.guard.labels import canonical_structure
from mmfreeze.guard.locate import RecipeRef, find_snapshot, read_snapshot, recipe_file, recipe_label
from mmfreeze.guard.message import render_report, summary_line
from mmfreeze.guard.optimizer import check_optimizer
from mmfreeze.guard.ranks import (
    DEFAULT_PEER_TIMEOUT_S,
    RankContext,
    RankReport,
    RankVerdict,
    current_ranks,
    exchange_verdicts,
)
from mmfreeze.guard.report import GuardReport, LocalCheck, VerifiedFrozenSet
from mmfreeze.snapshots.grouping import grouper

if TYPE_CHECKING:
    from torch import nn


def verify_frozen_set(
    model: nn.Module,
    recipe: RecipeRef,
    *,
    optimizer: Any = None,
    snapshot: str | os.PathLike[str] | None = None,
    gradients: bool = False,
    stage: bool = False,
    peer_timeout: float | None = DEFAULT_PEER_TIMEOUT_S,
) -> VerifiedFrozenSet:
    """Check that ``model`` trains exactly what the recipe's accepted snapshot says.

    - ``model``: the model, or its ``DistributedDataParallel`` wrapper.
    - ``recipe``: the recipe file (or a parsed ``Recipe``). Its snapshot is the file
      `mmfreeze snapshot RECIPE` compares with from the working directory
      (``<snapshot folder>/<recipe path from the repository root>.frozen.txt``, the same from any
      working directory); ``snapshot=`` gives its path instead.
    - ``optimizer``: when given, its param groups must hold every trainable parameter, no frozen
      one, and none twice, each in a group whose ``lr_mult`` / ``wd_mult`` (absent: 1) are the
      snapshot's rate for it.
    - ``gradients``: every trainable parameter must also hold a gradient (call it after a backward,
      before the optimizer step): a parameter the loss never reaches has none.
    - ``stage``: ``model`` is one pipeline stage: each of its parameters is checked against the
      snapshot, and the snapshot's other names are not looked for (they live on other ranks).
    - ``peer_timeout``: inside a process group, seconds to wait for the verdict of every rank that
      trains this model (``mmfreeze.guard.ranks``); ``None`` checks this rank alone.

    Raises :class:`~mmfreeze.exceptions.FrozenSetMismatchError` naming every difference, grouped by
    resolved module, and the ranks that disagree; :class:`~mmfreeze.exceptions.SnapshotError` when
    the snapshot is missing or unreadable.
    """
    context = current_ranks(model, whole_job=stage) if peer_timeout is not None else None
    try:
        live, local = _check_locally(_unwrapped(model), recipe, optimizer, snapshot, gradients, stage)
    except MmfreezeError as error:
        _share(context, False, f"could not verify: {error}", peer_timeout, wait=False)
        raise
    ranks = _share(context, local.ok, "" if local.ok else summary_line(local), peer_timeout, wait=True)
    report = GuardReport(
        local=local, rank=context.rank if context else None,
        world_size=context.world_size if context else 1, ranks=ranks,
    )
    if not report.ok:
        raise _mismatch(report, live)
    return _verified(report, live)


def _unwrapped(model: nn.Module) -> nn.Module:
    """The model inside a ``DistributedDataParallel`` wrapper (its names carry no ``module.``; the
    wrapper's process group still says which ranks train it)."""
    from torch.nn.parallel import DistributedDataParallel

    return model.module if isinstance(model, DistributedDataParallel) else model


def _check_locally(
    model: nn.Module, recipe: RecipeRef, optimizer: Any, snapshot: Any, gradients: bool, stage: bool,
) -> tuple[LiveModel, LocalCheck]:
    path = recipe_file(recipe)
    located = find_snapshot(path, snapshot)
    stored = read_snapshot(located, recipe=path)
    live = read_live_model(model)
    local = LocalCheck(
        recipe=recipe_label(recipe),
        snapshot=located,
        difference=compare_with_snapshot(live, stored, stage=stage),
        optimizer=check_optimizer(optimizer, live, stored.rate_of) if optimizer is not None else None,
        snapshot_transformers=stored.header.transformers,
        missing_gradients=missing_gradients(model, live) if gradients else None,
    )
    return live, local


def _share(
    context: RankContext | None, agrees: bool, summary: str, peer_timeout: float | None, *, wait: bool
) -> RankReport | None:
    if context is None or len(context.peers) < 2 or peer_timeout is None:
        return None
    verdict = RankVerdict(rank=context.rank, agrees=agrees, summary=summary)
    return exchange_verdicts(verdict, context, timeout_s=peer_timeout, wait=wait)


def _mismatch(report: GuardReport, live: LiveModel) -> FrozenSetMismatchError:
    message = render_report(report, group_of=grouper(canonical_structure(live.structure)), numel_of=live.numel)
    return FrozenSetMismatchError(message, source=report.local.recipe, details=report)


def _verified(report: GuardReport, live: LiveModel) -> VerifiedFrozenSet:
    return VerifiedFrozenSet(
        recipe=report.local.recipe,
        snapshot=report.local.snapshot,
        tensors=len(live.names),
        frozen_tensors=len(live.frozen),
        trainable_tensors=len(live.names) - len(live.frozen),
        optimizer_checked=report.local.optimizer is not None,
        gradients_checked=report.local.missing_gradients is not None,
        rank=report.rank,
        world_size=report.world_size,
        ranks_compared=report.ranks is not None,
    )
