"""`mmfreeze configs pull PATHS`: the configs folder a repository's recipes need, from the Hub, once."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from mmfreeze.cli.console import err, out, report_error
from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.options import configs_option, recipe_finder, repository_settings
from mmfreeze.cli.recipes import print_skipped, require_recipes_in_each
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.freeze.recipe_model import recipe_model_reader
from mmfreeze.models.config_folder import RECORD_FILE
from mmfreeze.models.hub import HUB_ANSWER_SECONDS, check_hub_answers, hub_endpoint
from mmfreeze.models.pull import Pulled, plan_pull, pull_configs
from mmfreeze.recipes.recipe import display_path

PULL_EPILOG = (
    "Writes <configs>/<org>/<name>/config.json (the Hub's file, unchanged) and, beside it, "
    f"{RECORD_FILE} with the commit it came from. Ids already in a local directory, the configs folder or "
    "the bundled registry are not fetched, so a second pull fetches nothing. Uses HF_ENDPOINT and HF_TOKEN; "
    f"a hub that refuses the connection or does not answer within {HUB_ANSWER_SECONDS:g} s ends the pull at once. "
    "Exit codes: 0 every config is there, 2 usage error (no configs folder, a path without recipes), "
    "3 a recipe could not be read or a config could not be fetched."
)


@click.group()
def configs() -> None:
    """Model configs for the recipes: the repository's configs folder ([tool.mmfreeze] configs)."""


@configs.command(epilog=PULL_EPILOG)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@configs_option
def pull(paths: tuple[Path, ...], configs: Path | None) -> None:
    """Download the config.json of every model the recipes under PATHS name and no offline source has."""
    settings = repository_settings(paths, configs=configs)
    if settings.configs is None:
        raise click.UsageError(
            f"no configs folder: set `configs = \"model_configs\"` under [tool.mmfreeze] in "
            f"{settings.pyproject or settings.root / 'pyproject.toml'}, or pass --configs DIR"
        )
    finder = recipe_finder(settings)
    try:
        discovery = finder.discover(paths)
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    require_recipes_in_each(paths, discovery)
    plan = plan_pull(discovery.recipes, configs_dir=settings.configs,
                     read_model=recipe_model_reader(finder.documents, root=settings.root))
    for error in plan.errors:
        report_error(error)
    if plan.missing:
        try:
            check_hub_answers(hub_endpoint())
        except MmfreezeError as error:
            report_error(error)
            raise SystemExit(ExitCode.INPUT_ERROR) from None
    failed = 0
    for outcome in pull_configs(list(plan.missing), settings.configs):
        if isinstance(outcome, Pulled):
            out.print(f"pulled {escape(outcome.model_id)} @ {outcome.revision[:12]} -> "
                      f"{escape(display_path(outcome.config_file))}")
        else:
            failed += 1
            report_error(outcome)
    print_skipped(discovery, settings)
    pulled = len(plan.missing) - failed
    err.print(f"[bold]configs[/]: {pulled} pulled, {failed} failed, {len(plan.available)} already available "
              f"(into {escape(display_path(settings.configs))})")
    raise SystemExit(ExitCode.INPUT_ERROR if failed or plan.errors else ExitCode.OK)
