"""pytest plugin: one test item per recipe, for a repository that checks its recipes' snapshots
inside its own pytest run. A thin adapter over :mod:`mmfreeze.snapshots.check`: each item is one
:func:`~mmfreeze.snapshots.check.check_recipe`, and the session ends with
:func:`~mmfreeze.snapshots.check.finish_run`. Installed through the ``pytest11`` entry point::

    [tool.pytest.ini_options]
    testpaths = ["tests", "recipes"]     # pytest must walk the recipe folders
    mmfreeze_recipes = ["recipes"]       # recipes below these get a snapshot test
    mmfreeze_snapshot_dir = "snapshots"  # default: [tool.mmfreeze] snapshots, else snapshots/

syrupy's own flags choose what is written: ``pytest --snapshot-update`` accepts changes and deletes
snapshots whose recipe is gone, ``--snapshot-update-new-only`` writes new ones; without them nothing
is written and a snapshot whose recipe is gone fails the run. Nothing is collected while
``mmfreeze_recipes`` is empty, so installing mmfreeze changes no other run. Which YAML files are
recipes is :class:`~mmfreeze.recipes.discovery.RecipeFinder`'s rule, the same as the command
line's, and the ``[tool.mmfreeze]`` settings of the rootdir's pyproject.toml apply.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.disk_cache import cache_directory
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.config_sources import missing_configs_summary
from mmfreeze.recipes.discovery import SKIPPED_DIRS
from mmfreeze.recipes.targets import parse_target_assignment
from mmfreeze.settings import BUILDER_SETTINGS, FALLBACK_SETTINGS, Settings, default_settings, find_settings
from mmfreeze.snapshots.check import (
    FAILING,
    Mode,
    SnapshotRun,
    check_recipe,
    finish_run,
    prefetch_models,
)
from mmfreeze.snapshots.layout import DEFAULT_SNAPSHOT_DIR
from mmfreeze.snapshots.store import recorded_renames
from mmfreeze.snapshots.render import render_text
from mmfreeze.workspace import Workspace

RUN_KEY = pytest.StashKey["SnapshotRun"]()
"""The session's :class:`SnapshotRun`, built from the options, ini values and ``[tool.mmfreeze]``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mmfreeze", "frozen-parameter snapshots of training recipes")
    group.addoption("--mmfreeze-recipes", action="append", default=[], metavar="PATH",
                    help="Folder or file whose YAML recipes get a snapshot test (repeatable).")
    parser.addini("mmfreeze_recipes", "Folders or files whose YAML recipes get a snapshot test.", type="paths", default=[])
    group.addoption("--mmfreeze-snapshot-dir", default=None, metavar="DIR",
                    help=f"Snapshot folder (default: [tool.mmfreeze] snapshots, else {DEFAULT_SNAPSHOT_DIR}/ under the rootdir).")
    parser.addini("mmfreeze_snapshot_dir", "Snapshot folder, relative to the rootdir.", default="")
    group.addoption("--mmfreeze-allow-target", action="append", default=[], metavar="TARGET=AutoModelFor...")
    group.addoption("--mmfreeze-configs", default=None, metavar="DIR",
                    help="Model-config folder, <org>/<name>/config.json (default: [tool.mmfreeze] configs).")
    group.addoption("--mmfreeze-exclude", action="append", default=None, metavar="GLOB",
                    help="Recipe path glob, relative to the rootdir, to skip (repeatable; default: [tool.mmfreeze] exclude).")
    group.addoption("--mmfreeze-cache-dir", default=None, metavar="DIR", help="Cache folder (model structures and frozen sets).")
    group.addoption("--mmfreeze-no-cache", action="store_true", help="Read and write no on-disk cache.")
    group.addoption("--mmfreeze-allow-network", action="store_true", help="Fetch configs from the hub.")
    group.addoption("--mmfreeze-builder", default=None, choices=BUILDER_SETTINGS,
                    help="What builds the models (default: [tool.mmfreeze] builder, else auto).")
    group.addoption("--mmfreeze-builder-fallback", default=None, choices=FALLBACK_SETTINGS,
                    help="transformers: build the transformers class where the framework's cannot be built on meta.")
    group.addoption("--mmfreeze-workers", type=int, default=None, metavar="N",
                    help="Worker processes building models missing from the cache (default: available cores).")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[RUN_KEY] = _run_of(config)


def mode_of(config: pytest.Config) -> Mode:
    """What syrupy's flags ask for (its options, when its plugin is loaded)."""
    if config.getoption("update_snapshots", default=False):
        return "update"
    if config.getoption("update_new_snapshots_only", default=False):
        return "new-only"
    return "check"


def _run_of(config: pytest.Config) -> SnapshotRun:
    """A repository's own pytest run: the run from the options, the ini values and ``[tool.mmfreeze]``."""
    option = config.option
    root = config.rootpath
    recipe_roots = [*option.mmfreeze_recipes, *config.getini("mmfreeze_recipes")]
    snapshot_dir = option.mmfreeze_snapshot_dir or config.getini("mmfreeze_snapshot_dir")
    try:
        settings = _settings(root, bool(recipe_roots)).overridden(
            configs=root / option.mmfreeze_configs if option.mmfreeze_configs else None,
            snapshots=root / snapshot_dir if snapshot_dir else None,
            allow_targets=[parse_target_assignment(text) for text in option.mmfreeze_allow_target],
            builder=option.mmfreeze_builder, builder_fallback=option.mmfreeze_builder_fallback,
        )
        if option.mmfreeze_exclude is not None:
            settings = replace(settings, exclude=tuple(option.mmfreeze_exclude))
        workspace = Workspace.of(settings, cache_dir=cache_directory(option.mmfreeze_cache_dir, option.mmfreeze_no_cache),
                                 records=recorded_renames(settings), allow_network=option.mmfreeze_allow_network)
        return SnapshotRun.of(workspace, recipe_roots=tuple((root / path).absolute() for path in recipe_roots),
                              only_recipes=False, workers=option.mmfreeze_workers)
    except MmfreezeError as error:
        raise pytest.UsageError(str(error)) from None


def _settings(root: Path, checks_recipes: bool) -> Settings:
    """A repository's own pytest run reads ``[tool.mmfreeze]`` from the pyproject.toml above its
    rootdir; a run that checks no recipe reads nothing (installing mmfreeze changes no other run)."""
    if not checks_recipes:
        return default_settings(root)
    settings = find_settings(cwd=root)
    return settings if settings.root == root else default_settings(root)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build every distinct model that is needed once, in parallel, before the items run."""
    run = session.config.stash[RUN_KEY]
    prefetch_models([item.path for item in session.items if isinstance(item, RecipeItem)], run)


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    run = config.stash[RUN_KEY]
    if collection_path.is_dir() and collection_path.name in SKIPPED_DIRS and run.recipe_roots:
        return True
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    run = parent.config.stash[RUN_KEY]
    if run.is_recipe(file_path.absolute()):
        return RecipeFile.from_parent(parent, path=file_path)
    return None


class RecipeFile(pytest.File):
    def collect(self) -> list[pytest.Item]:
        return [RecipeItem.from_parent(self, name=self.path.name)]


class SnapshotMismatch(Exception):
    """A recipe's frozen set differs from its snapshot, or the snapshot is missing."""


class RecipeItem(pytest.Item):
    """One recipe's snapshot check: :func:`~mmfreeze.snapshots.check.check_recipe`."""

    def runtest(self) -> None:
        run = self.config.stash[RUN_KEY]
        outcome = check_recipe(self.path, mode_of(self.config), run)
        run.result.outcomes.append(outcome)
        if outcome.status in FAILING:
            raise SnapshotMismatch(_failure_text(outcome))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, SnapshotMismatch):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"snapshot of {self.path.name}"


def _failure_text(outcome: Any) -> str:
    if outcome.status == "input_error":
        return f"input error: {outcome.message}"
    if outcome.status == "missing":
        return f"{outcome.recipe}: no snapshot at {outcome.snapshot}; accept with --snapshot-update"
    return render_text([outcome], [])


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The snapshots whose recipe is gone (deleted under ``--snapshot-update``); one that stays
    fails the run, as a changed recipe does."""
    run = session.config.stash[RUN_KEY]
    if not run.recipe_roots:
        return
    finish_run(run, mode_of(session.config))
    if any(not orphan.deleted for orphan in run.result.orphans) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    run = config.stash[RUN_KEY]
    for line in render_text([], run.result.orphans).splitlines():
        terminalreporter.write_line(f"mmfreeze: {line}", red=True)
    for message in run.result.warnings:
        terminalreporter.write_line(f"mmfreeze warning: {message}", yellow=True)
    if run.result.missing_configs:
        terminalreporter.write_line(
            "mmfreeze: " + missing_configs_summary(run.result.missing_configs, configs_dir=run.workspace.settings.configs), red=True
        )
