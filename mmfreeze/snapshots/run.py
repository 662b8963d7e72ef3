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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from mmfreeze.exceptions import SnapshotError
from mmfreeze.snapshots.layout import scope_dir
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.models.batch import BuildTick
from mmfreeze.snapshots.plugin import BUILD_PROGRESS_KEY, DOCUMENTS_KEY, RUN_KEY
from mmfreeze.snapshots.results import SnapshotRunResult

Mode = Literal["check", "update", "new-only"]
"""``check`` writes nothing; ``update`` accepts every change and deletes orphans; ``new-only``
writes snapshots for new recipes and leaves existing ones to review."""

MODE_FLAGS: dict[str, list[str]] = {
    "check": [], "update": ["--snapshot-update"], "new-only": ["--snapshot-update-new-only"],
}


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    paths: tuple[Path, ...]
    root: Path
    """Recipe and snapshot paths are stored relative to this folder (the repository root)."""
    snapshot_dir: Path
    mode: Mode
    allow_targets: tuple[str, ...] = ()
    configs_dir: Path | None = None
    exclude: tuple[str, ...] = ()
    """Recipe path globs relative to ``root`` that are not checked."""
    documents: YamlDocuments | None = field(default=None, compare=False)
    """The YAML the caller parsed while finding the recipes: the session does not parse it again."""
    cache_dir: Path | None = None
    no_cache: bool = False
    allow_network: bool = False
    workers: int | None = None
    builder: str | None = None
    """``auto``, ``framework`` or ``transformers`` (``None``: the settings' default)."""
    builder_fallback: str | None = None


def pytest_args(request: RunRequest) -> list[str]:
    snapshot_dir = (request.root / request.snapshot_dir).absolute()
    scopes = [scope_dir(path, request.root, snapshot_dir) for path in request.paths if path.is_dir()]
    args = [str(path.absolute()) for path in request.paths]
    args += [str(scope) for scope in scopes if scope.is_dir()]
    args += [
        "--disable-plugin-autoload", "-p", "syrupy", "-p", "mmfreeze.snapshots.plugin",
        "-c", os.devnull, "--rootdir", str(request.root), "--noconftest",
        "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:warnings",
        "--mmfreeze-only", "--mmfreeze-snapshot-dir", str(snapshot_dir),
        *MODE_FLAGS[request.mode],
    ]
    args += [f"--mmfreeze-recipes={path.absolute()}" for path in request.paths]
    args += [f"--mmfreeze-allow-target={target}" for target in request.allow_targets]
    args += [f"--mmfreeze-exclude={glob}" for glob in request.exclude]
    if request.configs_dir is not None:
        args.append(f"--mmfreeze-configs={request.configs_dir.absolute()}")
    if request.cache_dir is not None:
        args.append(f"--mmfreeze-cache-dir={request.cache_dir}")
    if request.workers is not None:
        args.append(f"--mmfreeze-workers={request.workers}")
    if request.builder is not None:
        args.append(f"--mmfreeze-builder={request.builder}")
    if request.builder_fallback is not None:
        args.append(f"--mmfreeze-builder-fallback={request.builder_fallback}")
    args += ["--mmfreeze-no-cache"] * request.no_cache + ["--mmfreeze-allow-network"] * request.allow_network
    return args


class _Collector:
    """Reads the plugin's results back out of the session, and reports progress."""

    def __init__(
        self, on_progress: Callable[[int, int], None] | None, documents: YamlDocuments | None,
        on_build: Callable[[BuildTick], None] | None,
    ) -> None:
        self.result: SnapshotRunResult | None = None
        self.total = 0
        self.done = 0
        self.on_progress = on_progress
        self.documents = documents
        self.on_build = on_build

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        if self.documents is not None:  # before the plugin configures: it reuses them
            config.stash[DOCUMENTS_KEY] = self.documents
        if self.on_build is not None:
            config.stash[BUILD_PROGRESS_KEY] = self.on_build

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    def pytest_runtest_logfinish(self) -> None:
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.result = session.config.stash[RUN_KEY].result


def run_snapshots(
    request: RunRequest, *, on_progress: Callable[[int, int], None] | None = None,
    on_build: Callable[[BuildTick], None] | None = None,
) -> SnapshotRunResult:
    """Run the session; ``on_progress(done, total)`` per recipe checked, ``on_build`` per distinct
    model built before the checks start (the long part of a cold run)."""
    collector = _Collector(on_progress, request.documents, on_build)
    status = pytest.main(pytest_args(request), plugins=[collector])
    if collector.result is None or status in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise SnapshotError(f"the snapshot session did not run (pytest exit status {int(status)})")
    return collector.result
