"""`mmfreeze migrate PATHS...`: rewrite legacy freeze_config (YAML, Python) and legacy distributed keys."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from mmfreeze.cli.console import err, out, report_error, warn_on_cache_write
from mmfreeze.cli.exit_codes import ExitCode, exit_code_help
from mmfreeze.cli.options import command_workspace, model_loading_options, repository_settings
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.migrate.report import (
    REPORT_FORMATS,
    FileResult,
    file_lines,
    integration_summary,
    render_json,
    render_markdown,
    summary_counts,
)
from mmfreeze.migrate.rules import RULES, resolve_disabled
from mmfreeze.migrate.run import MigrateOptions, find_migratable, is_failure, plan_files, write_changed
from mmfreeze.migrate.section import MODES
from mmfreeze.recipes.discovery import RECIPE_SUFFIXES, RecipeFinder

RULES_HELP = "Rules: " + "; ".join(f"{rule.id} {rule.name}" for rule in RULES) + ". "


@click.command(epilog=RULES_HELP + exit_code_help(ExitCode.OK, ExitCode.CHANGED, ExitCode.USAGE, ExitCode.INPUT_ERROR))
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when a file would change.")
@click.option("--diff", "show_diff", is_flag=True, help="Print unified diffs; write nothing.")
@click.option("--mode", type=click.Choice(MODES), default="preserve", show_default=True,
              help="preserve: keep every legacy frozen set exactly; intent: write what the keys meant, list differences.")
@click.option("--report", "report_format", type=click.Choice(REPORT_FORMATS), default="text", show_default=True)
@click.option("--report-file", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Also write the whole Markdown report here (standard output gets one that fits a pull-request comment).")
@click.option("--disable", "disabled", multiple=True, metavar="RULE", help="Skip a rule by id or name (repeatable).")
@click.option("--strict", is_flag=True, help="Fail when a Python site could not be rewritten safely.")
@model_loading_options
def migrate(
    paths: tuple[Path, ...], check: bool, show_diff: bool, mode: str, report_format: str, report_file: Path | None,
    disabled: tuple[str, ...],
    strict: bool, allow_network: bool, allow_targets: tuple[str, ...], configs: Path | None, cache_dir: Path | None,
    no_cache: bool,
) -> None:
    """Rewrite freeze_config in YAML recipes and Python call sites under PATHS to the new vocabulary."""
    settings = repository_settings(paths, configs=configs, allow_targets=allow_targets)
    workspace = command_workspace(settings, cache_dir=cache_dir, no_cache=no_cache, allow_network=allow_network,
                                  roundtrip=True)
    finder = workspace.finder
    try:
        options = MigrateOptions(mode=mode, disabled=resolve_disabled(disabled))
        found = find_migratable(paths)
        files = _recipes_and_sources(found, finder)
        excluded = sum(finder.is_excluded(path) for path in found)
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.USAGE if "--disable" == error.key else ExitCode.INPUT_ERROR) from None
    results = plan_files(files, options, workspace)
    if show_diff:
        for result in results:
            click.echo(result.diff(), nl=False)
    write_errors = [] if (check or show_diff) else write_changed(files, results, root=settings.root)
    warn_on_cache_write(workspace.structures)
    _print_report(results, report_format, mode, written=not (check or show_diff), excluded=excluded)
    if report_file is not None:
        report_file.write_text(render_markdown(results, mode=mode, limit=None), encoding="utf-8")
    for error in write_errors:
        report_error(error)
    raise SystemExit(_exit_code(results, check=check, strict=strict, write_failed=bool(write_errors)))


def _recipes_and_sources(files: list[Path], finder: RecipeFinder) -> list[Path]:
    """The recipes among the YAML files (the rule of every command) and the Python files, minus
    ``[tool.mmfreeze] exclude``."""
    return [path for path in files
            if not finder.is_excluded(path) and (path.suffix not in RECIPE_SUFFIXES or finder.is_recipe(path))]


def _exit_code(results: list[FileResult], *, check: bool, strict: bool, write_failed: bool) -> ExitCode:
    if write_failed or any(is_failure(result, strict=strict) for result in results):
        return ExitCode.INPUT_ERROR
    if check and any(result.changed for result in results):
        return ExitCode.CHANGED
    return ExitCode.OK


def _print_report(results: list[FileResult], report_format: str, mode: str, *, written: bool, excluded: int) -> None:
    if report_format == "json":
        click.echo(render_json(results, mode=mode))
        return
    if report_format == "markdown":
        click.echo(render_markdown(results, mode=mode), nl=False)
        return
    for result in results:
        details = file_lines(result)
        if result.changed or details:
            verb = "rewritten" if written and result.changed else ("would change" if result.changed else "unchanged")
            err.print(f"[bold]{escape(result.display)}[/]: {result.status}, {verb}")
            for line in details:
                err.print(f"  {escape(line)}")
    counts = ", ".join(f"{count} {status}" for status, count in summary_counts(results).items())
    skipped = f"; {excluded} excluded by [tool.mmfreeze] exclude" if excluded else ""
    out.print(f"{len(results)} files: {escape(counts) or 'nothing found'}{escape(skipped)}")
    if summary := integration_summary(results):
        out.print(escape(summary))
