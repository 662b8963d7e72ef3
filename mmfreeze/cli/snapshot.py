"""`mmfreeze snapshot PATHS`: compare every recipe's frozen set with its stored snapshot."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

import click
from rich.markup import escape
from rich.progress import Progress

from mmfreeze.cli.console import err, out, report_error, warn
from mmfreeze.cli.exit_codes import ExitCode, exit_code_help
from mmfreeze.cli.options import builder_options, command_workspace, model_loading_options, repository_settings, workers_option
from mmfreeze.cli.recipes import print_skipped, report_missing_configs, require_recipes_in_each
from mmfreeze.exceptions import MmfreezeError, RecipeError
from mmfreeze.models.batch import BuildTick, start_workers
from mmfreeze.snapshots.check import Mode, SnapshotRun, run_check
from mmfreeze.snapshots.layout import DEFAULT_SNAPSHOT_DIR, recipe_key
from mmfreeze.snapshots.render import RENDERERS, acceptance_advice, render_markdown
from mmfreeze.snapshots.results import SnapshotRunResult, Status
from mmfreeze.boundary.releases import snapshot_release_warning

EPILOG = (
    "Recipes are the YAML files under PATHS with a top-level `model:` key that [tool.mmfreeze] exclude does "
    "not match; a PATH without one is a usage error. Recipe and snapshot paths are relative to the repository "
    "root (the nearest folder above PATHS whose pyproject.toml has [tool.mmfreeze], else the git root), "
    "whatever the working directory. "
    "Without --update or --check, new recipes get their snapshot written and changes fail "
    "(like --check when $CI is set). When several outcomes apply, the exit code is the first of: "
    "input error (a recipe that could not be checked, a snapshot that could not be written or deleted), changed, "
    "builder switch, probe only, renamed, version only, missing, orphaned. 7, 8 and 9 are release differences "
    "alone (no tensor's trainability, adapter or rate moved): a CI job that moves to another release can accept "
    "them, and --accept-release writes those snapshots and nothing else. 10: this environment builds another "
    "class than the snapshot describes; check it where it was made. " + exit_code_help(
        ExitCode.OK, ExitCode.CHANGED, ExitCode.USAGE, ExitCode.INPUT_ERROR, ExitCode.MISSING, ExitCode.ORPHANED,
        ExitCode.VERSION_ONLY, ExitCode.RENAMED, ExitCode.PROBE_ONLY, ExitCode.BUILDER_SWITCH, ExitCode.INTERRUPTED)
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pick_mode(update: bool, check: bool, accept_release: bool = False) -> Mode:
    if update + check + accept_release > 1:
        raise click.UsageError("--update, --check and --accept-release exclude each other")
    if update:
        return "update"
    if accept_release:
        return "accept-release"
    return "check" if check or in_ci() else "new-only"


def exit_code_for(result: SnapshotRunResult) -> ExitCode:
    """The first that applies: input error, changed, builder switch, probe only, renamed, version only,
    missing, orphaned; else OK."""
    if result.with_status("input_error") or any(orphan.delete_error for orphan in result.orphans):
        return ExitCode.INPUT_ERROR
    for status in ("changed", "builder_switch", "probe_only", "renamed", "version_only", "missing"):
        if result.with_status(status):
            return ExitCode[status.upper()]
    if any(not orphan.deleted for orphan in result.orphans):
        return ExitCode.ORPHANED
    return ExitCode.OK


@click.command(epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--update", is_flag=True, help="Accept every change: write changed and new snapshots, delete orphans.")
@click.option("--check", is_flag=True, help="Write nothing; fail on any change, missing or orphaned snapshot (default when $CI is set).")
@click.option("--accept-release", is_flag=True, help="Write only the snapshots that differ in the release alone (version only, renamed, probe only); a real change still fails, and nothing else is written.")
@click.option("--snapshot-dir", type=click.Path(path_type=Path, file_okay=False), default=None, help=f"Snapshot folder; each recipe's file is <dir>/<recipe path from the repository root>.frozen.txt (default: [tool.mmfreeze] snapshots, else {DEFAULT_SNAPSHOT_DIR}/ in the repository root).")
@click.option("--report", "report_format", type=click.Choice(sorted(RENDERERS)), default="text", show_default=True, help="Report format: text for a terminal, markdown for a pull-request comment, json for machines.")
@click.option("--report-file", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Write the report here instead of standard output; a Markdown report is then whole, not cut to fit a pull-request comment.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, no summary line.")
@click.option("--progress", is_flag=True, help="Show progress (a line per model built, a bar per recipe checked) even when $CI is set.")
@workers_option
@builder_options
@model_loading_options
def snapshot(
    paths: tuple[Path, ...], update: bool, check: bool, accept_release: bool, snapshot_dir: Path | None, report_format: str,
    report_file: Path | None, quiet: bool, progress: bool, workers: int | None, builder: str | None,
    builder_fallback: str | None, allow_network: bool, allow_targets: tuple[str, ...], configs: Path | None,
    cache_dir: Path | None, no_cache: bool,
) -> None:
    """Compare the frozen parameters of every recipe under PATHS with their snapshots."""
    mode = pick_mode(update, check, accept_release)
    settings = repository_settings(paths, configs=configs, snapshots=snapshot_dir, allow_targets=allow_targets,
                                   builder=builder, builder_fallback=builder_fallback)
    workspace = command_workspace(settings, cache_dir=cache_dir, no_cache=no_cache, allow_network=allow_network)
    if not quiet:
        err.print(workspace.builder.note(), markup=False, highlight=False)
    try:
        discovery = workspace.finder.discover(paths)
        recipes = discovery.recipes
        require_recipes_in_each(paths, discovery)
        for path in paths:
            recipe_key(path, settings.root)
        run = SnapshotRun.of(workspace, recipe_roots=tuple(path.absolute() for path in paths), only_recipes=True,
                             workers=workers)
        if recipes and run.frozen_sets.is_empty():
            start_workers(workers)  # a first run builds every model: import torch while the recipes are read
        with _sigint_noted() as sigint:
            result = _run(recipes, mode, run, show=not quiet and (progress or not in_ci()))
        result.interrupted = result.interrupted or sigint.is_set()
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    except OSError as error:  # a folder under PATHS that cannot be listed: its recipes cannot be checked
        report_error(RecipeError(f"cannot read: {error.strerror or error}", source=error.filename and str(error.filename)))
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    if result.interrupted:
        err.print(f"interrupted: {len(result.outcomes)} of {len(recipes)} recipes checked, no report", markup=False)
        raise SystemExit(ExitCode.INTERRUPTED)
    for message in [*result.warnings, snapshot_release_warning(_releases_made_with(result))]:
        if message is not None:
            warn(message)
    _emit(_report_text(result, report_format, whole=report_file is not None), report_format, report_file)
    if not quiet:
        _print_summary(result, mode)
        print_skipped(discovery, settings)
    if result.missing_configs:
        report_missing_configs(result.missing_configs, settings, paths)
    raise SystemExit(exit_code_for(result))


def _releases_made_with(result: SnapshotRunResult) -> Counter[str]:
    """transformers release -> how many changed snapshots name it where the installed one differs."""
    return Counter(
        str(header.old) for outcome in result.with_status("changed", "builder_switch", "probe_only", "renamed",
                                                          "version_only")
        if outcome.change is not None
        for header in outcome.change.header_changes if header.field == "transformers"
    )


@contextlib.contextmanager
def _sigint_noted() -> Iterator[threading.Event]:
    """SIGINT raises KeyboardInterrupt as usual, and is also noted: Python drops an exception raised
    while a finalizer runs ("Exception ignored in ..."), and a Ctrl-C lost there must still end the
    run as interrupted, never as a finished check."""
    noted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield noted  # only the main thread may set a handler, and only it gets signals
        return

    def on_sigint(signum: int, frame: Any) -> None:
        noted.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


def _run(recipes: tuple[Path, ...], mode: Mode, run: SnapshotRun, *, show: bool) -> SnapshotRunResult:
    with Progress(console=err, transient=True, disable=not show) as progress:
        task = progress.add_task("checking snapshots", total=len(recipes))

        def built(tick: BuildTick) -> None:
            # One line per distinct model: a cold run spends most of its time here, before any check.
            progress.console.print(
                f"built {escape(tick.model_id)} ({escape(tick.built)}) in {tick.seconds:.1f}s [{tick.done}/{tick.total}]",
                highlight=False,
            )

        return run_check(recipes, mode, replace(run, on_build=built if show else None),
                         on_progress=lambda done, _: progress.update(task, completed=done))


def _report_text(result: SnapshotRunResult, report_format: str, *, whole: bool) -> str:
    """Markdown on standard output is a pull-request comment (bounded); a report file gets it all."""
    if report_format == "markdown" and whole:
        return render_markdown(result.outcomes, result.orphans, limit=None)
    return RENDERERS[report_format](result.outcomes, result.orphans)


def _emit(text: str, report_format: str, report_file: Path | None) -> None:
    if report_file is not None:
        report_file.write_text(text + "\n", encoding="utf-8")
    elif report_format == "text":
        if text:
            out.print(text, markup=False)
    else:
        click.echo(text)


def _print_summary(result: SnapshotRunResult, mode: Mode) -> None:
    counts = [f"{len(result.with_status(status))} {status.replace('_', ' ')}" for status in get_args(Status)]
    orphaned = sum(not orphan.deleted for orphan in result.orphans)
    deleted = len(result.orphans) - orphaned
    counts += [f"{orphaned} orphaned", f"{deleted} deleted"]
    err.print(f"[bold]snapshots[/] ({escape(mode)}): " + ", ".join(c for c in counts if not c.startswith("0 ")))
    if advice := acceptance_advice(result.outcomes, result.orphans):
        err.print(advice, markup=False)
