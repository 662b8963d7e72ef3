"""A migration run: find files, plan every one (no writes), then write the changed ones atomically."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mmfreeze.exceptions import MmfreezeError, RecipeError
from mmfreeze.migrate.atomic import resolve_write_target, write_atomic
from mmfreeze.migrate.python.prove import BoundModels
from mmfreeze.migrate.python_file import migrate_python
from mmfreeze.migrate.report import FileResult
from mmfreeze.migrate.section import Mode
from mmfreeze.migrate.yaml_file import migrate_yaml
from mmfreeze.recipes.discovery import RECIPE_SUFFIXES, iter_files
from mmfreeze.recipes.recipe import display_path, read_exact_text
from mmfreeze.workspace import Workspace

PYTHON_SUFFIXES = (".py",)


@dataclass(frozen=True, kw_only=True)
class MigrateOptions:
    """What the command asks of the rewrite; what it runs on is the command's
    :class:`~mmfreeze.workspace.Workspace` (its release, builder, config folder and world size)."""

    mode: Mode = "preserve"
    disabled: frozenset[str] = frozenset()


def find_migratable(paths: Iterable[Path]) -> list[Path]:
    """YAML recipes and Python files under ``paths`` (VCS data, environments and build folders skipped)."""
    return list(iter_files(paths, RECIPE_SUFFIXES + PYTHON_SUFFIXES))


def plan_files(
    files: Iterable[Path], options: MigrateOptions, workspace: Workspace,
) -> list[FileResult]:
    """Every file's migrated text and report; nothing is written. ``workspace.documents`` is the run's
    round-trip YAML (the one that decided which files are recipes): each file is parsed once. Each
    model is built once for the whole run, in the workspace."""
    bound = BoundModels(workspace)
    return [_plan_file(path, options, workspace, bound) for path in files]


def _plan_file(path: Path, options: MigrateOptions, workspace: Workspace, bound: BoundModels) -> FileResult:
    display = display_path(path)
    if path.suffix in PYTHON_SUFFIXES:
        try:
            text = read_exact_text(path, shown=display)
        except RecipeError as error:
            return FileResult(display=display, old_text="", new_text="", status="skipped", error=error.message)
        return migrate_python(text, display=display, disabled=options.disabled, directory=path.parent, models=bound)
    try:
        file = workspace.documents.file(path)
    except RecipeError as error:
        return FileResult(display=display, old_text="", new_text="", status="skipped", error=str(error))
    return migrate_yaml(path, file, display=display, mode=options.mode, disabled=options.disabled,
                        workspace=workspace)


def write_changed(
    files: Iterable[Path], results: Iterable[FileResult], *, root: Path | None = None
) -> list[MmfreezeError]:
    """Write each changed file atomically; a failed write is returned, the others still happen.

    A symbolic link stays a link: the file it resolves to is written (once, when both the link and
    its target are among ``files``) when it lies inside the repository ``root`` (default: each
    link's own), and refused otherwise (:func:`~mmfreeze.migrate.atomic.resolve_write_target`)."""
    errors = []
    written: set[Path] = set()
    for path, result in zip(files, results, strict=True):
        if not result.changed:
            continue
        try:
            target = resolve_write_target(path, root, display=result.display)
            if target not in written:
                write_atomic(target, result.new_text)
                written.add(target)
        except MmfreezeError as error:
            errors.append(error)
    return errors


def is_failure(result: FileResult, *, strict: bool) -> bool:
    """A skipped file always fails the run; unrewritten Python sites fail it under ``--strict``."""
    return result.status == "skipped" or (strict and bool(result.findings))
