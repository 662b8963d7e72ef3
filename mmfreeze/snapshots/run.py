"""Run the snapshot checks of some recipe paths as one pytest session, and collect what it found.

One session per call: pytest caches imported modules, so a second ``pytest.main`` in the same
process could serve stale state. The session loads only syrupy and our plugin (no autoloaded
plugins, no conftest, no ini file, no cache folder), so a check writes nothing anywhere.

Orphan scope: pytest gets each recipe folder *and* that folder's mirror under the snapshot
folder as paths. syrupy treats a snapshot under a directory path whose recipe is gone as unused
(reported; deleted by ``--update``); snapshots outside the given folders, and every snapshot when
only recipe files are given, are never looked at. Snapshots of recipes that still exist are never
unused (see :class:`~mmfreeze.snapshots.extension.RecipeSnapshotExtension`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

from mmfreeze.exceptions import SnapshotError
from mmfreeze.snapshots.layout import scope_dir
from mmfreeze.snapshots.plugin import RUN_KEY, SnapshotRun
from mmfreeze.snapshots.results import SnapshotRunResult

Mode = Literal["check", "update", "new-only", "accept-release"]
"""``check`` writes nothing; ``update`` accepts every change and deletes orphans; ``new-only``
writes snapshots for new recipes and leaves existing ones to review; ``accept-release`` writes only
the snapshots whose difference is the release alone (version only, renamed, probe only)."""

XDIST_WORKER = "PYTEST_XDIST_WORKER"
MODE_FLAGS: dict[str, list[str]] = {
    "check": [], "update": ["--snapshot-update"], "new-only": ["--snapshot-update-new-only"], "accept-release": [],
}


def pytest_args(paths: Sequence[Path], mode: Mode, run: SnapshotRun) -> list[str]:
    """The session's command line: what to collect and how syrupy writes. Every other setting
    travels in ``run``, the typed object the plugin reads."""
    scopes = [scope_dir(path, run.root, run.snapshot_dir) for path in paths if path.is_dir()]
    return [
        *(str(path.absolute()) for path in paths),
        *(str(scope) for scope in scopes if scope.is_dir()),
        "--disable-plugin-autoload", "-p", "syrupy", "-p", "mmfreeze.snapshots.plugin",
        "-c", os.devnull, "--rootdir", str(run.root), "--noconftest",
        "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:warnings",
        *MODE_FLAGS[mode],
    ]


class _Collector:
    """Hands the run to the plugin, and reports progress."""

    def __init__(self, run: SnapshotRun, on_progress: Callable[[int, int], None] | None) -> None:
        self.run = run
        self.finished = False
        self.total = 0
        self.done = 0
        self.on_progress = on_progress

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[RUN_KEY] = self.run  # before the plugin configures: it then builds none

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    def pytest_runtest_logfinish(self) -> None:
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        self.finished = True


def run_snapshots(
    paths: Sequence[Path], mode: Mode, run: SnapshotRun, *, on_progress: Callable[[int, int], None] | None = None,
) -> SnapshotRunResult:
    """Check the recipes under ``paths`` in one session; ``on_progress(done, total)`` per recipe checked."""
    collector = _Collector(run, on_progress)
    with _outside_xdist():
        status = pytest.main(pytest_args(paths, mode, run), plugins=[collector])
    if not collector.finished or status in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise SnapshotError(f"the snapshot session did not run (pytest exit status {int(status)})")
    return run.result


@contextmanager
def _outside_xdist() -> Iterator[None]:
    """Started from a pytest-xdist worker (a team's parallel test run calling `mmfreeze snapshot`),
    the session inherits ``PYTEST_XDIST_WORKER``; syrupy would then leave unused snapshots to an
    xdist controller this session does not have, and orphans would go unreported."""
    worker = os.environ.pop(XDIST_WORKER, None)
    try:
        yield
    finally:
        if worker is not None:
            os.environ[XDIST_WORKER] = worker
