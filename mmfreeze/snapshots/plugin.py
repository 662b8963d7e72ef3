"""pytest plugin: one test item per recipe, compared with its snapshot through syrupy.

Used by `mmfreeze snapshot` (one ``pytest.main`` session per call) and, through the ``pytest11``
entry point, by any repository's own test run::

    [tool.pytest.ini_options]
    testpaths = ["tests", "recipes"]     # pytest must walk the recipe folders
    mmfreeze_recipes = ["recipes"]       # recipes below these get a snapshot test
    mmfreeze_snapshot_dir = "snapshots"  # default: [tool.mmfreeze] snapshots, else snapshots/

``pytest --snapshot-update`` accepts changes; syrupy reports snapshots whose recipe is gone as unused.
Nothing is collected while ``mmfreeze_recipes`` is empty, so installing mmfreeze changes no other run.
Which YAML files are recipes is :class:`~mmfreeze.recipes.discovery.RecipeFinder`'s rule, the same
as the command line's, and the ``[tool.mmfreeze]`` settings of the rootdir's pyproject.toml apply.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.location import PyTestLocation

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import MissingModelConfigError, MmfreezeError, SnapshotError, first_line
from mmfreeze.disk_cache import cache_directory
from mmfreeze.distributed.native import native_support
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.config_sources import missing_configs_summary
from mmfreeze.models.framework import choose_builder
from mmfreeze.recipes.discovery import SKIPPED_DIRS, RecipeFinder
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.targets import DEFAULT_TARGETS, parse_target_assignment
from mmfreeze.models.batch import BuildTick
from mmfreeze.snapshots.compute import ComputedSnapshot, LoadingOptions, compute_snapshot, prefetch
from mmfreeze.snapshots.frozen_cache import FrozenSetCache
from mmfreeze.snapshots.diff import diff_snapshots
from mmfreeze.snapshots.extension import RecipeSnapshotExtension, os_reason
from mmfreeze.snapshots.format import parse_snapshot, render_snapshot
from mmfreeze.snapshots.grouping import grouper
from mmfreeze.snapshots.layout import (
    DEFAULT_SNAPSHOT_DIR,
    SNAPSHOT_SUFFIX,
    link_key,
    recipe_key,
    recipe_path,
    scope_dir,
)
from mmfreeze.snapshots.results import Orphan, RecipeOutcome, SnapshotRunResult
from mmfreeze.releases import framework_rules
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.settings import BUILDER_SETTINGS, FALLBACK_SETTINGS, Settings, default_settings, find_settings

RUN_KEY = pytest.StashKey["SnapshotRun"]()
"""The session's :class:`SnapshotRun`: handed in by `mmfreeze snapshot` (:mod:`mmfreeze.snapshots.run`)
before this plugin configures, else built from the options, ini values and ``[tool.mmfreeze]``."""


@dataclass(kw_only=True)
class SnapshotRun:
    """Settings and results of the recipes checked in one pytest session."""

    root: Path
    snapshot_dir: Path
    recipe_roots: tuple[Path, ...]
    """Absolute and without ``..``, as pytest names the files it collects (``recipes/team/..`` held
    no file pytest names, and the recipes under it went unchecked)."""
    only_recipes: bool
    """Collect recipes and nothing else (`mmfreeze snapshot` must not import a repository's tests)."""
    loading: LoadingOptions
    finder: RecipeFinder
    workers: int | None = None
    """Worker processes building models missing from the cache (``None``: the available cores)."""
    on_build: Callable[[BuildTick], None] | None = None
    """Told of every distinct model built before the checks start (the long part of a cold run)."""
    accept_release: bool = False
    """Write the snapshots whose only difference is the release (:data:`RELEASE_STATUSES`), and
    nothing else: a real change still fails (`snapshot --accept-release`)."""
    result: SnapshotRunResult = field(default_factory=SnapshotRunResult)
    _collected_from: tuple[str, ...] | None = field(default=None, repr=False)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, recipe_roots: tuple[Path, ...], only_recipes: bool, documents: YamlDocuments,
        cache_dir: Path | None, allow_network: bool = False, workers: int | None = None,
        on_build: Callable[[BuildTick], None] | None = None, accept_release: bool = False,
    ) -> SnapshotRun:
        """The run of one repository's ``settings`` (command-line values already on top)."""
        return cls(
            root=settings.root,
            snapshot_dir=settings.snapshots,
            recipe_roots=tuple(Path(os.path.abspath(path)) for path in recipe_roots),
            only_recipes=only_recipes,
            loading=LoadingOptions(
                allowed_targets={**DEFAULT_TARGETS, **settings.allow_targets},
                cache=StructureCache(cache_dir),
                frozen_sets=FrozenSetCache(cache_dir),
                allow_network=allow_network,
                root=settings.root,
                configs_dir=settings.configs,
                documents=documents,
                framework=framework_rules(settings.framework),
                builder=choose_builder(settings.builder, settings.builder_fallback),
            ),
            finder=RecipeFinder(root=settings.root, exclude=settings.exclude, documents=documents),
            workers=workers,
            on_build=on_build,
            accept_release=accept_release,
        )

    def is_recipe(self, path: Path) -> bool:
        return any(path.is_relative_to(r) for r in self.recipe_roots) and self.finder.is_recipe(path)

    def on_the_way(self, folder: Path) -> bool:
        """Whether ``folder`` holds, or lies inside, a folder this run collects from (the recipes'
        and, for orphans, their snapshot mirrors). pytest asks for every entry of every folder it
        walks, thousands in a temporary folder's parents: the folders are worked out once."""
        if self._collected_from is None:
            self._collected_from = tuple(str(path) for path in (*self.recipe_roots, *self.orphan_scopes()))
        text = str(folder)
        return any(text == path or text.startswith(path + os.sep) or path.startswith(text.rstrip(os.sep) + os.sep)
                   for path in self._collected_from)

    def tracks(self, path: Path) -> bool:
        """Whether ``path`` is a recipe that exists (its snapshot is not an orphan)."""
        return path.is_file() and self.finder.is_recipe(path)

    def snapshot_name(self, key: str) -> str:
        """The snapshot path of the recipe ``key``, as a report names it."""
        return _relative(self.snapshot_dir / (key + SNAPSHOT_SUFFIX), self.root)

    def orphan_scopes(self) -> tuple[Path, ...]:
        """Where snapshots of vanished recipes are looked for. `mmfreeze snapshot`: the mirrors of
        the folders among its PATHS (none when only files are given), whatever pytest is handed to
        collect from; a repository's own run: the whole snapshot folder (pytest's arguments narrow it)."""
        if not self.only_recipes:
            return (self.snapshot_dir,)
        return tuple(scope_dir(path, self.root, self.snapshot_dir) for path in self.recipe_roots if path.is_dir())


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
    if RUN_KEY not in config.stash:  # else `mmfreeze snapshot` handed its run in
        config.stash[RUN_KEY] = _run_of(config)
    run = config.stash[RUN_KEY]
    config.pluginmanager.register(SessionWatch(run), SessionWatch.name)
    if run.only_recipes:
        # A recipe that fails to collect is reported as its input error; the others are still checked.
        config.option.continue_on_collection_errors = True


class SessionWatch:
    """What the session does outside the recipe items, recorded in the run's result: hooks that
    pytest calls without the config."""

    name = "mmfreeze-session-watch"

    def __init__(self, run: SnapshotRun) -> None:
        self.run = run

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A folder or file that could not be collected is an input error naming it, never a
        recipe left out in silence."""
        if report.failed and self.run.only_recipes:  # a repository's own run: pytest reports it
            self.run.result.outcomes.append(collection_outcome(report, self.run))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """SIGINT (not pytest stopping itself): the outcomes are not every recipe's, and the run says so."""
        if excinfo.type is KeyboardInterrupt:
            self.run.result.interrupted = True


def collection_outcome(report: pytest.CollectReport, run: SnapshotRun) -> RecipeOutcome:
    """The input error of a path pytest could not collect, named like the recipe it may be."""
    key = report_key(Path(os.path.normpath(run.root / report.nodeid.split("::", 1)[0])), run.root)
    reason = next((line.strip() for line in reversed(report.longreprtext.splitlines()) if line.strip()), "unknown")
    return RecipeOutcome(recipe=key, snapshot=run.snapshot_name(key), status="input_error",
                         message=f"{key}: cannot collect it for the check: {reason}")


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
        return SnapshotRun.from_settings(
            settings,
            recipe_roots=tuple((root / path).absolute() for path in recipe_roots),
            only_recipes=False,
            documents=YamlDocuments(root),
            cache_dir=cache_directory(option.mmfreeze_cache_dir, option.mmfreeze_no_cache),
            allow_network=option.mmfreeze_allow_network,
            workers=option.mmfreeze_workers,
        )
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
    """Build every distinct model that is needed once, in parallel, before the per-recipe items run.

    Only work is saved here: each item computes what is missing on its own. A fault while building
    ahead (not an input error: those wait for their recipe's item) is a warning, never the end of
    the session, which would leave every recipe unchecked."""
    run = session.config.stash[RUN_KEY]
    paths = [item.path for item in session.items if isinstance(item, RecipeItem) and item.location_error is None]
    if not paths:
        return
    try:
        prefetch(paths, run.loading, workers=run.workers, on_build=run.on_build)
    except Exception as error:  # noqa: BLE001  reported, and each recipe is then checked on its own
        run.result.warnings.append(f"building the models ahead stopped ({unexpected_error(error)}); "
                                   "each recipe was checked on its own")


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    run = config.stash[RUN_KEY]
    if collection_path.is_dir():
        if collection_path.name in SKIPPED_DIRS and run.recipe_roots:
            return True
        if run.only_recipes and not run.on_the_way(Path(os.path.abspath(collection_path))):
            return True  # pytest walks from above the root (the repository's siblings too): a warm check's time
        # `mmfreeze snapshot` walks the folders discovery walks: pytest's own norecursedirs (`.*`,
        # `*.egg`, `CVS`, ...) would skip recipes the command found, and they would go unchecked.
        return (collection_path / "pyvenv.cfg").exists() if run.only_recipes else None
    # `mmfreeze snapshot .` must not import the repository's own test modules.
    return True if run.only_recipes and not run.is_recipe(collection_path.absolute()) else None


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
    """One recipe's snapshot check. Carries what :class:`RecipeSnapshotExtension` needs to find its file."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        run = self.config.stash[RUN_KEY]
        self.root = run.root
        self.snapshot_dir = run.snapshot_dir
        self.location_error: SnapshotError | None = None
        """Why the recipe has no place in the repository (it resolves outside it): reported as its
        input error when the item runs, never a collection error that stops the session."""
        try:
            self.recipe_key = recipe_key(self.path, run.root)
        except SnapshotError as error:
            self.recipe_key = link_key(self.path, run.root)
            self.location_error = SnapshotError(error.message, source=self.recipe_key)
        except (OSError, RuntimeError) as error:  # a symbolic-link loop: RuntimeError from Path.resolve
            self.recipe_key = link_key(self.path, run.root)
            self.location_error = SnapshotError(f"cannot resolve the path: {error}", source=self.recipe_key)
        self.snapshot_path = run.snapshot_dir / (self.recipe_key + SNAPSHOT_SUFFIX)

    def tracks(self, recipe: Path) -> bool:
        """Whether ``recipe`` exists and is a recipe this run would check (not excluded, has `model:`)."""
        return self.config.stash[RUN_KEY].tracks(recipe)

    @property
    def obj(self) -> Any:
        # syrupy's PyTestLocation names a test after its function's module and name.
        return self.runtest

    @property
    def orphan_scopes(self) -> tuple[Path, ...]:
        """Where :class:`RecipeSnapshotExtension` looks for snapshots of vanished recipes."""
        return self.config.stash[RUN_KEY].orphan_scopes()

    def record_delete_failure(self, location: str, reason: str) -> None:
        """An orphaned snapshot could not be deleted: reported with it, and the run fails (a failed write)."""
        self.config.stash[RUN_KEY].result.delete_errors[location] = reason

    def runtest(self) -> None:
        outcome = self._checked()
        self.config.stash[RUN_KEY].result.outcomes.append(outcome)
        if outcome.status in FAILING:
            raise SnapshotMismatch(_failure_text(outcome))

    def _checked(self) -> RecipeOutcome:
        """The recipe's outcome, whatever happens: an error mmfreeze did not foresee (a bug, or the
        machine: MemoryError) is this recipe's input error, named, never a recipe left out."""
        if self.location_error is not None:
            return self._build("input_error", message=str(self.location_error))
        try:
            return self._check()
        except MmfreezeError as error:
            return self._build("input_error", message=self._input_error(error))
        except Exception as error:  # noqa: BLE001  reported for this recipe; the run fails
            return self._build("input_error", message=f"{self.recipe_key}: {unexpected_error(error)}")

    def _check(self) -> RecipeOutcome:
        computed = compute_snapshot(self.path, self.recipe_key, self.config.stash[RUN_KEY].loading)
        text = render_snapshot(computed.snapshot)
        assertion = SnapshotAssertion(
            update_snapshots=self.config.option.update_snapshots,
            update_new_snapshots_only=self.config.option.update_new_snapshots_only,
            extension_class=RecipeSnapshotExtension,
            test_location=PyTestLocation(self),
            session=self.config._syrupy,  # type: ignore[attr-defined]
        )
        assertion == text  # noqa: B015  records the execution; the outcome is read from it below
        execution = assertion.executions[0]
        if execution.exception is not None:  # the stored file could not be read, or the new one written
            return self._build("input_error", message=self._file_error(execution.exception))
        outcome = self._outcome(execution, computed)
        if outcome.status in RELEASE_STATUSES and self.config.stash[RUN_KEY].accept_release:
            return self._accepted(outcome, text)
        return outcome

    def _accepted(self, outcome: RecipeOutcome, text: str) -> RecipeOutcome:
        """A release-only difference written as the current snapshot (atomically)."""
        try:
            replace_file(self.snapshot_path, text.encode("utf-8"))
        except OSError as error:
            return self._build("input_error", message=f"{_relative(self.snapshot_path, self.root)}: cannot write "
                                                      f"the snapshot: {os_reason(error, str(self.snapshot_path))}")
        return replace(outcome, status="updated")

    def _outcome(self, execution: Any, computed: ComputedSnapshot) -> RecipeOutcome:
        stored = execution.recalled_data
        native = native_support(computed.recipe.framework_document)
        if stored is None:
            return self._build("written" if execution.success else "missing", nemo_automodel=native)
        if execution.success and not execution.updated:
            return self._build("passed", nemo_automodel=native)
        status = "updated" if execution.success else "changed"
        try:
            old = parse_snapshot(stored, source=_relative(self.snapshot_path, self.root))
        except SnapshotError as error:
            return self._build(status, message=str(error), nemo_automodel=native)
        structure = computed.trained_structure()
        change = diff_snapshots(
            old, computed.snapshot,
            numel_of={info.name: info.numel for info in structure.parameters},
            group_of=grouper(structure, override_specs(computed.recipe.module_overrides)),
        )
        if status == "changed" and change.version_only:
            status = "version_only"
        elif status == "changed" and change.renamed_only:
            status = "renamed"
        elif status == "changed" and change.probe_only:
            status = "probe_only"
        return self._build(status, change=change, nemo_automodel=native)

    def _file_error(self, error: Exception) -> str:
        """The report's message for a snapshot file syrupy could not read or write, named relative
        to the root like every other path in the report."""
        where = _relative(self.snapshot_path, self.root)
        if isinstance(error, SnapshotError):
            return f"{where}: {error.message}"
        if isinstance(error, OSError):  # syrupy creating the snapshot's folder
            return f"{where}: cannot write the snapshot: {os_reason(error, str(self.snapshot_path))}"
        return f"{where}: {type(error).__name__}: {error}"

    def _input_error(self, error: MmfreezeError) -> str:
        """The report's message; a model id without a config is listed once for the whole run
        (:attr:`SnapshotRunResult.missing_configs`), so its line stays short."""
        if not isinstance(error, MissingModelConfigError):
            return str(error)
        missing = self.config.stash[RUN_KEY].result.missing_configs
        same_id = next((known for known in missing if known.lower() == error.model_id.lower()), error.model_id)
        missing.setdefault(same_id, []).append(self.recipe_key)  # the Hub's ids are case-insensitive
        where = ": ".join(part for part in (error.source, error.key) if part)
        return f"{where}: no config for model id {error.model_id!r} (see the summary of missing configs)"

    def _build(self, status: Any, **details: Any) -> RecipeOutcome:
        return RecipeOutcome(recipe=self.recipe_key, snapshot=_relative(self.snapshot_path, self.root), status=status, **details)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, SnapshotMismatch):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"snapshot of {self.recipe_key}"


FAILING = frozenset({"input_error", "changed", "probe_only", "renamed", "version_only", "missing"})
"""The outcomes that fail the recipe's item (a repository's own run then fails)."""
RELEASE_STATUSES = frozenset({"version_only", "renamed", "probe_only"})
"""Differences in the release that made a snapshot alone: no tensor's trainability, adapter or rate moved."""


def unexpected_error(error: BaseException) -> str:
    """An error mmfreeze has no message of its own for, as a report line: its type, and its text."""
    if isinstance(error, MemoryError):
        return "out of memory (MemoryError)"
    text = first_line(error)
    return f"unexpected {type(error).__name__}" + (f": {text}" if text else "") + " (a fault of mmfreeze: please report it)"


def _failure_text(outcome: RecipeOutcome) -> str:
    if outcome.status == "input_error":
        return f"input error: {outcome.message}"
    if outcome.status == "missing":
        return f"{outcome.recipe}: no snapshot at {outcome.snapshot}; accept with --snapshot-update"
    from mmfreeze.snapshots.render import render_text

    return render_text([outcome], [])


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Record cache warnings, and the recipe snapshots syrupy found unused (their recipe is gone)
    after it deleted any."""
    run = session.config.stash[RUN_KEY]
    for cache in (run.loading.cache, run.loading.frozen_sets):
        if (message := cache.write_warning()) is not None:
            run.result.warnings.append(message)
    report = getattr(getattr(session.config, "_syrupy", None), "report", None)
    if report is None or report.disable_unused_snapshots:
        return
    for collection in report.unused:
        location = Path(collection.location)
        if not location.is_relative_to(run.snapshot_dir):
            continue  # another extension's snapshot (the repository's own tests): not ours to report
        deleted = not location.exists()
        if deleted:
            _prune_empty_folders(location.parent, run.snapshot_dir)
        run.result.orphans.append(Orphan(
            snapshot=_relative(location, run.root),
            recipe=_relative(recipe_path(location, run.root, run.snapshot_dir), run.root),
            deleted=deleted,
            delete_error=run.result.delete_errors.get(collection.location),
        ))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    run = config.stash[RUN_KEY]
    for message in run.result.warnings:
        terminalreporter.write_line(f"mmfreeze warning: {message}", yellow=True)
    if run.result.missing_configs:
        terminalreporter.write_line(
            "mmfreeze: " + missing_configs_summary(run.result.missing_configs, configs_dir=run.loading.configs_dir), red=True
        )


def _prune_empty_folders(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_relative_to(stop) and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def report_key(path: Path, root: Path) -> str:
    """How a report names the recipe at ``path``: its key, or where it cannot have one (outside the
    root, a link loop) its path as given without ``..``, as pytest gives it to its item."""
    try:
        return recipe_key(path, root)
    except (SnapshotError, OSError, RuntimeError):
        return link_key(Path(os.path.abspath(path)), root)


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
