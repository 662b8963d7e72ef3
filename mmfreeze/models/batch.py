"""Build many requests' missing structures: one build per distinct config, spread over worker processes.

Recipes that share a checkpoint share one key (config content + Auto class + library versions),
so a corpus costs what its distinct architectures cost. Cache hits never import torch or
transformers. Misses are built in worker processes unless one worker is asked for: the workers
are forked from a forkserver that imported torch and transformers once, so the import is paid
once and its memory (about 0.5 GB for a CUDA build of torch) is shared copy-on-write instead of
being private to every worker. Results do not depend on the worker count: a structure is a pure
function of its key.

No process outlives the command: the forkserver dies with it (:mod:`mmfreeze.models.forkserver_exit`),
each worker watches it (:func:`exit_with_parent`), and an interrupted build stops its workers
(:func:`_stop_workers`) instead of waiting for their builds.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import EnvironmentBuildError, MmfreezeError, first_line
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.framework import BuildSpec
from mmfreeze.models.composite import DrafterBuild
from mmfreeze.models.loader import (
    ModelRequest,
    StructureSource,
    build_needed,
    build_structure,
    store_built,
    structure_source,
)
from mmfreeze.models.structure import MixesToProbe, ModelStructure

if TYPE_CHECKING:
    from mmfreeze.models.probe.run import Prober

WORKER_DIED = (
    "the worker process building this model ended abruptly (killed, for instance by the "
    "out-of-memory killer, or crashed); --workers 1 builds in this process instead"
)
PRELOAD = ("mmfreeze.models.build_preload",)
EXIT_WITH_PARENT = "mmfreeze.models.forkserver_exit"
"""Preloaded first, when the main thread starts the forkserver: the server dies with this process."""
STOP_SECONDS = 5.0
"""How long an interrupted build waits for each killed worker to be gone."""


@dataclass(frozen=True, kw_only=True)
class BuildTick:
    """One distinct model built (or failed): what a progress display shows while workers build."""

    done: int
    total: int
    model_id: str
    """The first request's model id for this build."""
    built: str
    """The built class name, or ``failed``."""
    seconds: float


@dataclass(frozen=True)
class _Pending:
    request: ModelRequest
    """The first request of this build (its builder, Auto class and drafter are every user's)."""
    source: StructureSource
    probe: MixesToProbe | None
    """What the build probes: the mixes its requests ask for that the cached entry, if any, has no probe of."""


def default_workers() -> int:
    return max(1, min(len(os.sched_getaffinity(0)), 8))


def start_workers(workers: int | None = None) -> None:
    """Start the worker processes' import of torch and transformers now, for a caller that
    knows builds are coming (an empty cache) before it knows which."""
    if (workers or default_workers()) > 1:
        _forkserver()


def build_missing(
    requests: Iterable[ModelRequest],
    cache: StructureCache,
    *,
    workers: int | None = None,
    allow_network: bool = False,
    on_built: Callable[[str], None] | None = None,
    on_tick: Callable[[BuildTick], None] | None = None,
) -> dict[ModelRequest, MmfreezeError]:
    """Put every request's structure into ``cache``, building each missing one once, with a probe
    of every mix its requests ask for (a cached entry short of one is built again).

    ``on_built(key)`` runs in this process as each new structure arrives, while the workers
    build the rest; ``on_tick`` then hears of every build, failed ones included. Returns the
    requests that could not get a structure, with the error that stopped them (the others carry
    on). Entries already in the cache are read only for a probed request.
    """
    workers = workers or default_workers()
    errors: dict[ModelRequest, MmfreezeError] = {}
    pending: dict[str, _Pending] = {}
    users: dict[str, list[ModelRequest]] = {}
    for request in requests:
        try:
            source = structure_source(request, allow_network=allow_network)
        except MmfreezeError as error:
            errors[request] = error
            continue
        needed, probe = build_needed(cache, source.key, request.probe)
        if needed:
            first = pending.get(source.key, _Pending(request, source, probe))
            pending[source.key] = replace(first, probe=_union(first.probe, probe))
            users.setdefault(source.key, []).append(request)
            if workers > 1:
                _forkserver()  # starts importing torch now, while the remaining requests are read
    for done, (key, outcome, seconds) in enumerate(_build_all(list(pending.values()), workers), start=1):
        if isinstance(outcome, MmfreezeError):
            errors.update((request, _for_request(outcome, request)) for request in users[key])
            built = "failed"
        else:
            built = store_built(cache, key, ModelStructure.from_json(outcome), encoded=outcome).class_name
            if on_built is not None:
                on_built(key)
        if on_tick is not None:
            on_tick(BuildTick(done=done, total=len(pending), model_id=pending[key].request.model_id,
                              built=built, seconds=seconds))
    return errors


def _union(first: MixesToProbe | None, other: MixesToProbe | None) -> MixesToProbe | None:
    return first if other is None else other if first is None else first | other


def _for_request(error: MmfreezeError, request: ModelRequest) -> MmfreezeError:
    """A shared build's error, restated for each request (recipe) that uses that build."""
    return type(error)(error.message, source=request.source, key="model")


Built = tuple[str, Mapping[str, Any] | MmfreezeError, float]
"""A build's key, its structure (as JSON) or error, and the seconds it took in its process."""


def _build_all(pending: list[_Pending], workers: int) -> Iterator[Built]:
    if not pending:
        return
    groups: dict[str, list[Job]] = {}  # builds of one config run together, so they share its probes
    for p in pending:
        groups.setdefault(json.dumps(p.source.config.config, sort_keys=True, default=str), []).append(
            (p.source.key, p.source.config.config, p.request.auto_class, p.request.source, p.request.build,
             p.source.drafter, p.probe))
    if workers <= 1:
        yield from (outcome for group in groups.values() for outcome in _build_group(group))
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(groups)), mp_context=_forkserver(), initializer=_start_worker)
    try:
        futures = {pool.submit(_build_group, group): group for group in groups.values()}
        for future in as_completed(futures):
            try:
                yield from future.result()
            except BrokenProcessPool:
                for key, _, _, display_path, _, _, _ in futures[future]:
                    yield key, EnvironmentBuildError(WORKER_DIED, source=display_path, key="model"), 0.0
    except BaseException:  # SIGINT, or the caller stopped early (GeneratorExit): no build is worth finishing
        _stop_workers(pool)
        raise
    pool.shutdown()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers now. ``shutdown`` alone waits for every running build (a minute for a
    large model's probes); Python 3.14's ``terminate_workers`` does this, 3.11 has no public way."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError):  # already gone, or already closed
            process.kill()
    for process in processes:
        with contextlib.suppress(ValueError):
            process.join(STOP_SECONDS)


def _start_worker() -> None:
    """gc.freeze: the libraries' objects, inherited from the forkserver, leave the collector's reach,
    so collections neither walk them (time) nor write to their pages (copy-on-write copies: about
    150 MiB over two workers, measured). One torch thread: the workers already use a core each, and
    the probes' real forwards on shrunken configs, each using every core, took up to 8 times their
    single-process time when two ran at once (Qwen3.5-35B's, 5 s alone, 40 s, measured)."""
    import torch

    exit_with_parent()
    gc.freeze()
    torch.set_num_threads(1)


def exit_with_parent() -> None:
    """End this worker as soon as the process that asked for it ends: a thread waits on the pipe
    that process holds open for each worker (``multiprocessing.parent_process().sentinel``), which
    reads as closed when it is gone, however it ended (SIGTERM, SIGKILL, a crash). The parent of a
    worker is the forkserver, so ``PR_SET_PDEATHSIG`` would watch the wrong process."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)  # the command is gone: nobody reads what this worker would build

    threading.Thread(target=watch, name="mmfreeze-exit-with-parent", daemon=True).start()


def _forkserver() -> multiprocessing.context.BaseContext:
    """Workers forked from a server that has the libraries imported, never from this process
    (which may hold threads) and never spawned (which would repeat the import per worker).
    Idempotent: the server is started once per process. Started by the main thread, the server
    dies with this process (:data:`EXIT_WITH_PARENT`); the workers watch it in either case."""
    context = multiprocessing.get_context("forkserver")
    on_main_thread = threading.current_thread() is threading.main_thread()
    context.set_forkserver_preload([EXIT_WITH_PARENT] * on_main_thread + list(PRELOAD))
    multiprocessing.forkserver.ensure_running()
    return context


Job = tuple[str, Mapping[str, Any], str, str, BuildSpec, DrafterBuild | None, MixesToProbe | None]
"""A build's key, config, Auto class, recipe (for messages), builder, composite drafter, and the mixes to probe."""


def _build_group(jobs: list[Job]) -> list[Built]:
    """Worker entry point: builds of one config, in order, each class's mix probed once. Returns
    plain data (JSON-shaped) so nothing torch-typed crosses processes."""
    probers: dict[type, Prober] = {}
    outcomes = []
    for key, config, auto_class, display_path, build, drafter, probe in jobs:
        started = time.perf_counter()
        try:
            value: dict[str, Any] | MmfreezeError = build_structure(
                config, auto_class, source=display_path, build=build, drafter=drafter, probe=probe, probers=probers
            ).to_json()
        except MmfreezeError as error:
            value = error
        except Exception as error:  # noqa: BLE001  a fault of this build only: the other builds go on
            text = first_line(error)
            value = EnvironmentBuildError(f"building the model failed unexpectedly: {type(error).__name__}"
                                          + (f": {text}" if text else ""), source=display_path, key="model")
        outcomes.append((key, value, time.perf_counter() - started))
    return outcomes
