"""Every rank's verdict, shared through the process group's key-value store, with no collective.

Under FSDP2 every rank holds its own parameter objects and ``requires_grad`` is per rank: code
that runs on some ranks only (a rank-conditional freeze, a checkpoint load on one rank) can leave
ranks training different sets. Each rank first compares its own view with the snapshot, which is
the shared reference, so no rank needs another's parameters. To name the ranks that disagree,
each rank then posts its verdict to the default process group's store (the TCPStore or FileStore
that ``init_process_group`` met through) and waits, for at most ``timeout_s``, until all its peers
have. The peers are the ranks that train the same model (:func:`current_ranks`): those of the device
meshes its DTensor parameters live on (FSDP2, tensor parallelism), or of the process group of a
wrapper that keeps one (DDP); a model with neither is this rank's alone (the framework does not
shard a model on a one-rank mesh). Ranks that train nothing (a distillation teacher on its own mesh)
never step an optimizer, so they are not waited for.

- no collective runs: store calls are requests to the store server, and the one wait has its own
  deadline, so a rank that crashed, hangs or never calls the guard becomes an error naming it
  after ``timeout_s``, never a hang;
- every rank ends with the same picture: the ranks that disagree (with a one-line summary each),
  those that agree, those that did not report. If any rank disagrees every rank raises, so no
  rank goes on into a first step that a failed peer will never join;
- the success path costs a few store round trips (no tensor, no gloo or NCCL traffic);
- each call is a round numbered by a per-rank counter kept in the store for its set of peers, so
  calling the guard again (after loading a checkpoint) starts a fresh round; every peer calls it the
  same number of times.

When the store cannot be used (or this torch has no default store), the rank warns and keeps its
own verdict: the exchange adds information, it never replaces the local check.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

KEY_PREFIX = "mmfreeze/verify_frozen_set"
DEFAULT_PEER_TIMEOUT_S = 300.0
"""How long a rank waits for the others' verdicts: generous, since ranks reach the guard after
set-up steps whose length differs between ranks; a missing rank only delays the error."""
SUMMARIES_READ = 4
"""Other ranks' one-line summaries read back (every disagreeing rank is named regardless)."""


@dataclass(frozen=True, kw_only=True)
class RankContext:
    rank: int
    world_size: int
    peers: tuple[int, ...]
    """The ranks that train this rank's model, this one included (the ranks whose verdicts it waits for)."""


@dataclass(frozen=True, kw_only=True)
class RankVerdict:
    rank: int
    agrees: bool
    summary: str = ""
    """What differs on this rank, in one line (empty when it agrees)."""


@dataclass(frozen=True, kw_only=True)
class RankReport:
    """Every rank's verdict as this rank read it after the round."""

    rank: int
    world_size: int
    peers: tuple[int, ...]
    disagreeing: tuple[int, ...]
    summaries: Mapping[int, str]
    """Rank -> its summary, for the first :data:`SUMMARIES_READ` disagreeing ranks."""
    missing: tuple[int, ...]
    """Ranks that had not posted a verdict when the wait ended."""
    timeout_s: float

    @property
    def agreeing(self) -> tuple[int, ...]:
        return tuple(r for r in self.peers if r not in self.disagreeing and r not in self.missing)

    @property
    def all_agree(self) -> bool:
        return not (self.disagreeing or self.missing)


def current_ranks(model: Any = None, *, whole_job: bool = False) -> RankContext | None:
    """This process's rank in the default process group and the peers that train ``model`` with it,
    or ``None`` outside a process group.

    ``whole_job``: every rank is a peer (pipeline stages: a stage's mesh names only its
    data-parallel ranks, and the other stages train the same model)."""
    import torch.distributed as dist  # torch is imported already: the model is a torch module

    if not (dist.is_available() and dist.is_initialized()):
        return None
    rank, world_size = dist.get_rank(), dist.get_world_size()
    peers = set(range(world_size)) if whole_job or model is None else _model_ranks(model)
    return RankContext(rank=rank, world_size=world_size, peers=tuple(sorted(peers | {rank})))


def _model_ranks(model: Any) -> set[int]:
    """The global ranks that hold ``model``: its DTensor parameters' device meshes (public
    ``DTensor.device_mesh.mesh``, a tensor of global ranks), else the process group of a wrapper
    that keeps one (``DistributedDataParallel.process_group``), else none but this one."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    meshes = {id(p.device_mesh): p.device_mesh for p in model.parameters() if isinstance(p, DTensor)}
    if meshes:
        return {int(rank) for mesh in meshes.values() for rank in mesh.mesh.flatten().tolist()}
    group = getattr(model, "process_group", None)
    if isinstance(group, dist.ProcessGroup):
        return set(dist.get_process_group_ranks(group))
    return set()


def exchange_verdicts(
    verdict: RankVerdict, context: RankContext, *, timeout_s: float, wait: bool = True
) -> RankReport | None:
    """Post ``verdict``; with ``wait``, read every peer's once all posted or ``timeout_s`` passed.

    ``None`` without ``wait``, or when the store cannot be used (with a warning).
    """
    try:
        store = _default_store()
        base = _post(store, verdict, context.peers)
        if not wait:
            return None
        complete = _wait_for_all(store, base, timeout_s)
        return _read(store, base, context, complete=complete, timeout_s=timeout_s)
    except (RuntimeError, ValueError) as error:  # the store is unreachable, or there is none
        warnings.warn(
            f"mmfreeze.verify_frozen_set: could not compare with the other ranks through the process "
            f"group's store ({type(error).__name__}: {error}); rank {verdict.rank} was checked alone",
            RuntimeWarning, stacklevel=3,
        )
        return None


def _default_store() -> Any:
    from torch.distributed import distributed_c10d

    # Private, but the only way to reach the store the job already met through (no public accessor).
    get_store = getattr(distributed_c10d, "_get_default_store", None)
    if get_store is None:
        raise RuntimeError("this torch has no torch.distributed.distributed_c10d._get_default_store")
    return get_store()


def _post(store: Any, verdict: RankVerdict, peers: tuple[int, ...]) -> str:
    """Post this rank's verdict in its next round among ``peers``; the last to post marks it complete."""
    group = f"{KEY_PREFIX}/{','.join(map(str, peers))}"
    round_number = store.add(f"{group}/calls/{verdict.rank}", 1)
    base = f"{group}/{round_number}"
    if not verdict.agrees:
        store.set(f"{base}/summary/{verdict.rank}", verdict.summary)
        store.append(f"{base}/disagreeing", f"{verdict.rank},")
    store.append(f"{base}/arrived", f"{verdict.rank},")
    if store.add(f"{base}/count", 1) == len(peers):
        store.set(f"{base}/complete", "1")
    return base


def _wait_for_all(store: Any, base: str, timeout_s: float) -> bool:
    try:
        store.wait([f"{base}/complete"], timedelta(seconds=timeout_s))
    except RuntimeError:  # the deadline passed (DistStoreError; a FileStore raises RuntimeError)
        return False
    return True


def _read(store: Any, base: str, context: RankContext, *, complete: bool, timeout_s: float) -> RankReport:
    disagreeing = _ranks_at(store, f"{base}/disagreeing")
    summaries = {other: _summary(store, base, other) for other in disagreeing[:SUMMARIES_READ]}
    arrived = set(_ranks_at(store, f"{base}/arrived"))
    missing = () if complete else tuple(r for r in context.peers if r not in arrived)
    return RankReport(
        rank=context.rank, world_size=context.world_size, peers=context.peers, disagreeing=disagreeing,
        summaries=summaries, missing=missing, timeout_s=timeout_s,
    )


def _summary(store: Any, base: str, rank: int) -> str:
    key = f"{base}/summary/{rank}"
    return store.get(key).decode("utf-8", "replace") if store.check([key]) else "(no summary posted)"


def _ranks_at(store: Any, key: str) -> tuple[int, ...]:
    """The ranks appended to ``key`` as ``"3,0,"`` (never blocks: an absent key is no ranks)."""
    if not store.check([key]):
        return ()
    text = store.get(key).decode("ascii")
    return tuple(sorted({int(part) for part in text.split(",") if part}))
