"""The verdict exchange through a store: every rank names the same disagreeing and missing ranks,
within the deadline. Ranks are threads sharing one in-memory store (the real 2-process gloo run
is in tests/distributed/test_guard_runs.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.distributed as dist

import mmfreeze.guard.verify as verify_module
from mmfreeze.exceptions import FrozenSetMismatchError
from mmfreeze.guard import ranks as ranks_module
from mmfreeze.guard import verify_frozen_set
from mmfreeze.guard.ranks import RankContext, RankReport, RankVerdict, exchange_verdicts
from tests.guard.helpers import TINY_FREEZE, trainable_parameters, write_snapshot


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Any:
    shared = dist.HashStore()
    monkeypatch.setattr(ranks_module, "_default_store", lambda: shared)
    return shared


def as_ranks(*calls: Callable[[], Any]) -> list[Any]:
    """Run each call in its own thread (rank i runs calls[i]); results or exceptions, by rank."""
    results: list[Any] = [None] * len(calls)

    def run(rank: int) -> None:
        try:
            results[rank] = calls[rank]()
        except Exception as error:  # the test asserts on it
            results[rank] = error

    threads = [threading.Thread(target=run, args=(rank,), name=f"rank{rank}") for rank in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


TWO = (0, 1)


def context(rank: int, peers: tuple[int, ...] = TWO, world_size: int = 2) -> RankContext:
    return RankContext(rank=rank, world_size=world_size, peers=peers)


def verdict_call(rank: int, agrees: bool, summary: str = "", *, timeout_s: float = 30.0, wait: bool = True,
                 peers: tuple[int, ...] = TWO, world_size: int = 2):
    verdict = RankVerdict(rank=rank, agrees=agrees, summary=summary)
    return lambda: exchange_verdicts(verdict, context(rank, peers, world_size), timeout_s=timeout_s, wait=wait)


def test_every_rank_names_the_disagreeing_rank_with_its_summary_and_the_agreeing_one(store):
    reports = as_ranks(verdict_call(0, True), verdict_call(1, False, "1 newly trainable (e.g. w)"))

    for rank, report in enumerate(reports):
        assert report == RankReport(rank=rank, world_size=2, peers=TWO, disagreeing=(1,),
                                    summaries={1: "1 newly trainable (e.g. w)"}, missing=(), timeout_s=30.0)
        assert report.agreeing == (0,) and not report.all_agree


def test_a_rank_that_never_reports_is_named_after_the_deadline_not_waited_for(store):
    started = time.monotonic()

    report = exchange_verdicts(RankVerdict(rank=0, agrees=True), context(0), timeout_s=0.5)

    assert report.missing == (1,) and report.agreeing == (0,) and not report.all_agree
    assert time.monotonic() - started < 5


def test_each_call_is_a_fresh_round(store):
    first = as_ranks(verdict_call(0, True), verdict_call(1, False, "x"))
    second = as_ranks(verdict_call(0, True), verdict_call(1, True))

    assert [report.disagreeing for report in first] == [(1,), (1,)]
    assert all(report.all_agree and report.agreeing == (0, 1) for report in second)


def test_ranks_that_train_another_model_are_neither_waited_for_nor_counted(store):
    """Distillation on separate meshes: ranks 0-1 train the student, rank 2 serves the teacher and
    never steps an optimizer. The student's ranks complete their round without rank 2, which never posts."""
    started = time.monotonic()
    reports = as_ranks(*(verdict_call(rank, rank == 0, "" if rank == 0 else "1 newly trainable (e.g. w)",
                                      peers=TWO, world_size=3) for rank in TWO))

    assert [report.disagreeing for report in reports] == [(1,), (1,)]
    assert all(report.missing == () and report.agreeing == (0,) and report.peers == TWO for report in reports)
    assert time.monotonic() - started < 5


def test_rounds_are_counted_per_set_of_peers(store):
    """A rank that checked a model of its own sub-mesh first is still in step with the whole job's rounds."""
    alone = exchange_verdicts(RankVerdict(rank=0, agrees=True), context(0, peers=(0,)), timeout_s=1)
    together = as_ranks(verdict_call(0, True), verdict_call(1, True))

    assert alone.all_agree and alone.peers == (0,)
    assert all(report.all_agree and report.agreeing == TWO for report in together)


def test_a_rank_that_posts_without_waiting_is_seen_by_the_others(store):
    reports = as_ranks(verdict_call(0, True), verdict_call(1, False, "could not verify: no snapshot", wait=False))

    assert reports[1] is None
    assert reports[0].disagreeing == (1,) and reports[0].summaries == {1: "could not verify: no snapshot"}


def test_an_unusable_store_warns_and_leaves_the_local_verdict(monkeypatch):
    def no_store() -> Any:
        raise ValueError("Default process group has not been initialized")

    monkeypatch.setattr(ranks_module, "_default_store", no_store)

    with pytest.warns(RuntimeWarning, match="rank 0 was checked alone"):
        assert exchange_verdicts(RankVerdict(rank=0, agrees=True), context(0), timeout_s=1) is None


def test_no_process_group_means_no_exchange():
    assert not dist.is_initialized()
    assert ranks_module.current_ranks() is None


def test_verify_on_an_agreeing_rank_fails_naming_the_rank_whose_model_differs(store, tmp_path, monkeypatch):
    """Two ranks (threads), each with its own model; rank 1 unfroze one tower weight after building
    its optimizer. Both raise:
    rank 1 with the name in full, rank 0 saying it agrees and rank 1 does not."""
    from tests.distributed.tiny_vlms import build_tiny
    from mmfreeze.freeze.apply import apply_freeze_config

    monkeypatch.chdir(tmp_path)
    models = [build_tiny("llava") for _ in range(2)]
    write_snapshot(models[0], {"freeze_config": TINY_FREEZE}, tmp_path, "recipes/tiny.yaml")
    for model in models:
        apply_freeze_config(model, TINY_FREEZE)
    optimizers = [torch.optim.SGD(trainable_parameters(model), lr=0.1) for model in models]
    tampered = "model.vision_tower.embeddings.patch_embedding.weight"
    dict(models[1].named_parameters())[tampered].requires_grad_(True)
    monkeypatch.setattr(verify_module, "current_ranks",
                        lambda model, whole_job: context(int(threading.current_thread().name[-1])))

    errors = as_ranks(*(lambda m=m, o=o: verify_frozen_set(m, "recipes/tiny.yaml", optimizer=o, peer_timeout=30)
                        for m, o in zip(models, optimizers)))

    assert all(isinstance(error, FrozenSetMismatchError) for error in errors), errors
    rank0, rank1 = (str(error) for error in errors)
    snapshot = "snapshots/recipes/tiny.yaml.frozen.txt"
    assert f"this rank (0) matches the accepted snapshot {snapshot}, but not every one of the 2 ranks does" in rank0
    assert (f"  ranks that disagree: 1\n    rank 1: 1 newly trainable (e.g. {tampered}); "
            "optimizer: 1 trainable missed\n") in rank0
    assert "  ranks that agree: 0 (this rank)" in rank0
    assert f"the live model does not match the accepted snapshot {snapshot} on rank 1 of 2" in rank1
    assert f"      {tampered}\n" in rank1 and "  ranks that disagree: 1 (this rank)\n  ranks that agree: 0" in rank1
