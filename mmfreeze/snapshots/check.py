"""The snapshot check as a plain call chain: prefetch -> for each recipe compute, compare, diff,
write -> scan for orphans -> one :class:`SnapshotRunResult`.

`mmfreeze snapshot` calls :func:`run_check` with the recipes discovery found; a repository's own
pytest run (:mod:`mmfreeze.snapshots.plugin`) calls :func:`check_recipe` per item and
:func:`finish_run` at the end. Neither path imports pytest or syrupy here.

Orphan scope: a snapshot under the mirror of a folder among the command's PATHS whose recipe is
gone is orphaned (reported; deleted by ``--update``); snapshots outside the given folders, and every
snapshot when only recipe files are given, are never looked at. Snapshots of recipes that still
exist are never orphans, even when this run did not check them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mmfreeze.distributed.native import native_support
from mmfreeze.exceptions import MissingModelConfigError, MmfreezeError, SnapshotError, first_line
from mmfreeze.models.batch import BuildTick
from mmfreeze.recipes.recipe import Recipe
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.snapshots.compute import compute_snapshot, prefetch
from mmfreeze.snapshots.diff import RecipeChange, diff_snapshots
from mmfreeze.snapshots.format import Snapshot, SnapshotHeader, parse_snapshot, render_snapshot
from mmfreeze.snapshots.frozen_cache import FrozenSetCache
from mmfreeze.snapshots.grouping import grouper
from mmfreeze.snapshots.layout import SNAPSHOT_SUFFIX, link_key, recipe_key, recipe_path, scope_dir
from mmfreeze.snapshots.results import RELEASE_ONLY, Orphan, RecipeOutcome, SnapshotRunResult, Status, unchecked_outcome
from mmfreeze.snapshots.store import check_inside, delete_stored, read_stored, snapshot_files, write_stored
from mmfreeze.workspace import Workspace

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.memory.change import ChangeCost

Mode = Literal["check", "update", "new-only", "accept-release"]
"""``check`` writes nothing; ``update`` accepts every change and deletes orphans; ``new-only``
writes snapshots for new recipes and leaves existing ones to review; ``accept-release`` writes only
the snapshots whose difference is the release alone (version only, renamed, probe only)."""

FAILING = frozenset({"input_error", "changed", "builder_switch", "probe_only", "renamed", "version_only", "missing"})
"""The outcomes that fail the recipe (a repository's own pytest run then fails its item)."""


@dataclass(kw_only=True)
class SnapshotRun:
    """Settings and results of the recipes checked in one run."""

    workspace: Workspace
    """The command's run context: settings, builder, structures, parsed YAML, recipes and their frozen sets."""
    frozen_sets: FrozenSetCache
    """The frozen sets earlier runs computed, on disk: a warm run reads neither models nor the resolver."""
    recipe_roots: tuple[Path, ...]
    """Absolute and without ``..``: the paths the run was given."""
    only_recipes: bool
    """`mmfreeze snapshot`: orphans are looked for in the mirrors of the folders it was given; a
    repository's own pytest run: in the whole snapshot folder."""
    workers: int | None = None
    """Worker processes building models missing from the cache (``None``: the available cores)."""
    on_build: Callable[[BuildTick], None] | None = None
    """Told of every distinct model built before the checks start (the long part of a cold run)."""
    result: SnapshotRunResult = field(default_factory=SnapshotRunResult)

    @classmethod
    def of(
        cls, workspace: Workspace, *, recipe_roots: tuple[Path, ...], only_recipes: bool, workers: int | None = None,
    ) -> SnapshotRun:
        """The run of one command's ``workspace``; the frozen sets share its structures' cache folder."""
        return cls(
            workspace=workspace,
            frozen_sets=FrozenSetCache(workspace.structures.directory),
            recipe_roots=tuple(Path(os.path.abspath(path)) for path in recipe_roots),
            only_recipes=only_recipes,
            workers=workers,
        )

    @property
    def root(self) -> Path:
        return self.workspace.settings.root

    @property
    def snapshot_dir(self) -> Path:
        return self.workspace.settings.snapshots

    def is_recipe(self, path: Path) -> bool:
        return any(path.is_relative_to(r) for r in self.recipe_roots) and self.workspace.finder.is_recipe(path)

    def tracks(self, path: Path) -> bool:
        """Whether ``path`` is a recipe that exists (its snapshot is not an orphan)."""
        return path.is_file() and self.workspace.finder.is_recipe(path)

    def snapshot_name(self, key: str) -> str:
        """The snapshot path of the recipe ``key``, as a report names it."""
        return relative(self.snapshot_dir / (key + SNAPSHOT_SUFFIX), self.root)

    def orphan_scopes(self) -> tuple[Path, ...]:
        """Where snapshots of vanished recipes are looked for (see the module's docstring)."""
        if not self.only_recipes:
            return (self.snapshot_dir,)
        return tuple(scope_dir(path, self.root, self.snapshot_dir) for path in self.recipe_roots if path.is_dir())


def run_check(
    recipes: Sequence[Path], mode: Mode, run: SnapshotRun, *, on_progress: Callable[[int, int], None] | None = None,
) -> SnapshotRunResult:
    """Check ``recipes`` in order and scan for orphans; ``on_progress(done, total)`` per recipe.
    SIGINT ends the loop with what was checked, marked interrupted."""
    try:
        prefetch_models(recipes, run)
        for done, path in enumerate(recipes, start=1):
            run.result.outcomes.append(check_recipe(path, mode, run))
            if on_progress is not None:
                on_progress(done, len(recipes))
    except KeyboardInterrupt:
        run.result.interrupted = True
        return run.result
    finish_run(run, mode)
    return run.result


def prefetch_models(recipes: Sequence[Path], run: SnapshotRun) -> None:
    """Build every distinct model that is needed once, in parallel, before the per-recipe checks.

    Only work is saved here: each check computes what is missing on its own. A fault while building
    ahead (not an input error: those wait for their recipe's check) is a warning, never the end of
    the run, which would leave every recipe unchecked."""
    if not recipes:
        return
    try:
        prefetch(recipes, run.workspace, run.frozen_sets, workers=run.workers, on_build=run.on_build)
    except Exception as error:  # noqa: BLE001  reported, and each recipe is then checked on its own
        run.result.warnings.append(f"building the models ahead stopped ({unexpected_error(error)}); "
                                   "each recipe was checked on its own")


def finish_run(run: SnapshotRun, mode: Mode) -> None:
    """After the last recipe: the orphans (deleted under ``update``), and the caches that could not be written."""
    run.result.orphans.extend(find_orphans(run, delete=mode == "update"))
    run.result.warnings.extend(message for cache in (run.workspace.structures, run.frozen_sets)
                               if (message := cache.write_warning()) is not None)


@dataclass(frozen=True, kw_only=True)
class _Located:
    """A recipe's place: its key, its snapshot file, and why it has none (outside the repository)."""

    key: str
    snapshot: Path
    error: SnapshotError | None = None

    def outcome(self, status: Status, root: Path, **details: object) -> RecipeOutcome:
        return RecipeOutcome(recipe=self.key, snapshot=relative(self.snapshot, root), status=status, **details)


def check_recipe(path: Path, mode: Mode, run: SnapshotRun) -> RecipeOutcome:
    """The recipe's outcome, whatever happens: an error mmfreeze did not foresee (a bug, or the
    machine: MemoryError) is this recipe's input error, named, never a recipe left out."""
    if not path.is_file():
        key = report_key(path, run.root)
        return unchecked_outcome(key, run.snapshot_name(key), _why_unread(path, run))
    located = locate(path, run)
    if located.error is not None:
        return located.outcome("input_error", run.root, message=str(located.error))
    try:
        return _check(path, located, mode, run)
    except MmfreezeError as error:
        return located.outcome("input_error", run.root, message=_input_error(error, located.key, run))
    except Exception as error:  # noqa: BLE001  reported for this recipe; the run fails
        return located.outcome("input_error", run.root, message=f"{located.key}: {unexpected_error(error)}")


def locate(path: Path, run: SnapshotRun) -> _Located:
    try:
        key = recipe_key(path, run.root)
        error = None
    except SnapshotError as failure:
        key = link_key(path, run.root)
        error = SnapshotError(failure.message, source=key)
    except (OSError, RuntimeError) as failure:  # a symbolic-link loop: RuntimeError from Path.resolve
        key = link_key(path, run.root)
        error = SnapshotError(f"cannot resolve the path: {failure}", source=key)
    return _Located(key=key, snapshot=run.snapshot_dir / (key + SNAPSHOT_SUFFIX), error=error)


def _check(path: Path, located: _Located, mode: Mode, run: SnapshotRun) -> RecipeOutcome:
    snapshot = compute_snapshot(path, located.key, run.workspace, run.frozen_sets)
    text = render_snapshot(snapshot)
    try:
        check_inside(located.snapshot, run.snapshot_dir)
        stored = read_stored(located.snapshot)
    except SnapshotError as error:
        return located.outcome("input_error", run.root, message=f"{relative(located.snapshot, run.root)}: {error.message}")
    recipe = run.workspace.recipe(path)
    native = native_support(recipe.framework_document)
    if stored is None:
        if mode in ("update", "new-only"):
            return _written(located, text, run, located.outcome("written", run.root, nemo_automodel=native))
        return located.outcome("missing", run.root, nemo_automodel=native)
    if stored == text:
        return located.outcome("passed", run.root, nemo_automodel=native)
    outcome = replace(_compared(stored, snapshot, recipe, located, run), nemo_automodel=native)
    if mode == "update" or (mode == "accept-release" and outcome.status in RELEASE_ONLY):
        return _written(located, text, run, replace(outcome, status="updated"))
    return outcome


def _compared(stored: str, snapshot: Snapshot, recipe: Recipe, located: _Located, run: SnapshotRun) -> RecipeOutcome:
    """A stored snapshot that differs: what moved, and whether the release alone moved it (the caller
    adds how nemo-automodel runs the recipe)."""
    shown = relative(located.snapshot, run.root)
    if not stored.strip():
        return located.outcome("input_error", run.root, message=(
            f"{shown}: the snapshot file is empty; `mmfreeze snapshot --update {located.key}` writes it again"))
    try:
        old = parse_snapshot(stored, source=shown)
    except SnapshotError as error:
        return located.outcome("changed", run.root, message=str(error))
    result = run.workspace.frozen_set(recipe)
    structure = result.structure
    change = diff_snapshots(
        old, snapshot,
        numel_of={info.name: info.numel for info in structure.parameters},
        group_of=grouper(structure, override_specs(recipe.module_overrides)),
    )
    if change.nothing_moved:
        return located.outcome("changed", run.root, change=change, message=(
            f"{shown} holds this very snapshot in another order or layout (edited by hand?): no tensor, adapter, "
            "rate or header field moved; `mmfreeze snapshot --update` writes it in its canonical form"))
    if (switch := builder_switch(old.header, snapshot.header)) is not None:
        return located.outcome("builder_switch", run.root, message=switch, change=change)
    status: Status = ("version_only" if change.version_only else "renamed" if change.renamed_only
                      else "probe_only" if change.probe_only else "changed")
    moved = status == "changed" and bool(change.newly_frozen or change.newly_trainable)
    cost = _cost(change, result, recipe, run) if moved else None
    return located.outcome(status, run.root, change=change, cost=cost)


def _cost(change: RecipeChange, result: FrozenSetResult, recipe: Recipe, run: SnapshotRun) -> ChangeCost:
    """What moving tensors between frozen and trainable costs per rank (computed for a changed recipe
    only: the check pays nothing else). Adapters added or removed change the model itself, and are
    sized by `mmfreeze explain --world-size`, not here."""
    from mmfreeze.memory.change import moved_cost

    return moved_cost(recipe, result, change.newly_frozen, change.newly_trainable,
                      world_setting=run.workspace.settings.world_size,
                      loaded=run.workspace.loaded(run.workspace.request(recipe)))


def builder_switch(stored: SnapshotHeader, now: SnapshotHeader) -> str | None:
    """Which classes, when this environment builds another class than the one ``stored`` describes:
    another builder, and another class name or the framework's own class on one side only
    (``divergence``); ``None`` when both build the same class. One line per kind in a report."""
    if stored.builder == now.builder or (stored.architecture, stored.divergence) == (now.architecture, now.divergence):
        return None
    return f"snapshot: {_built(stored)}; here: {_built(now)}"


def _built(header: SnapshotHeader) -> str:
    library = f"transformers {header.transformers}"
    return f"{header.architecture} by " + (library if header.builder == "transformers" else f"{header.builder} ({library})")


def _written(located: _Located, text: str, run: SnapshotRun, outcome: RecipeOutcome) -> RecipeOutcome:
    """``outcome`` (``written`` for a new snapshot, ``updated`` for an accepted change) once the
    current snapshot is stored; a failed write is the recipe's input error."""
    try:
        write_stored(located.snapshot, text)
    except SnapshotError as error:
        return located.outcome("input_error", run.root, message=f"{relative(located.snapshot, run.root)}: {error.message}")
    return outcome


def find_orphans(run: SnapshotRun, *, delete: bool) -> list[Orphan]:
    """The snapshots in the run's orphan scopes whose recipe is gone; deleted when ``delete``
    (one that cannot be deleted stays, with the reason: a failed write)."""
    orphans = []
    for location in snapshot_files(run.orphan_scopes()):
        recipe = recipe_path(location, run.root, run.snapshot_dir)
        if run.tracks(recipe):
            continue
        error = delete_stored(location, run.snapshot_dir) if delete else None
        orphans.append(Orphan(snapshot=relative(location, run.root), recipe=relative(recipe, run.root),
                              deleted=delete and error is None, delete_error=error))
    return orphans


def _input_error(error: MmfreezeError, key: str, run: SnapshotRun) -> str:
    """The report's message; a model id without a config is listed once for the whole run
    (:attr:`SnapshotRunResult.missing_configs`), so its line stays short."""
    if not isinstance(error, MissingModelConfigError):
        return str(error)
    missing = run.result.missing_configs
    same_id = next((known for known in missing if known.lower() == error.model_id.lower()), error.model_id)
    missing.setdefault(same_id, []).append(key)  # the Hub's ids are case-insensitive
    where = ": ".join(part for part in (error.source, error.key) if part)
    return f"{where}: no config for model id {error.model_id!r} (see the summary of missing configs)"


def _why_unread(path: Path, run: SnapshotRun) -> str | None:
    """Why a recipe that is not a regular file cannot be checked (a link loop)."""
    if path.exists():
        return "not a regular file"  # a pipe or a device: never opened (a pipe would block the run)
    try:
        run.workspace.documents.read(path)
    except MmfreezeError as error:
        return error.message
    return None


def unexpected_error(error: BaseException) -> str:
    """An error mmfreeze has no message of its own for, as a report line: its type, and its text."""
    if isinstance(error, MemoryError):
        return "out of memory (MemoryError)"
    text = first_line(error)
    return f"unexpected {type(error).__name__}" + (f": {text}" if text else "") + " (a fault of mmfreeze: please report it)"


def report_key(path: Path, root: Path) -> str:
    """How a report names the recipe at ``path``: its key, or where it cannot have one (outside the
    root, a link loop) its path as given without ``..``."""
    try:
        return recipe_key(path, root)
    except (SnapshotError, OSError, RuntimeError):
        return link_key(Path(os.path.abspath(path)), root)


def relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
