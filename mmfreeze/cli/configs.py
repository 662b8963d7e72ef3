"""`mmfreeze configs pull PATHS`: the configs folder a repository's recipes need, from the Hub (or,
offline, the local Hugging Face cache), once."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from mmfreeze.cli.console import err, out, report_error
from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.options import configs_option, repository_settings
from mmfreeze.cli.recipes import print_skipped, require_recipes_in_each
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.freeze.recipe_model import recipe_model_reader
from mmfreeze.models.config_folder import RECORD_FILE
from mmfreeze.models.hub import (
    HUB_ANSWER_SECONDS,
    OFFLINE_VARIABLE,
    hub_cache_folder,
    hub_endpoint,
    hub_offline,
    hub_unreachable,
)
from mmfreeze.models.pull import Pulled, plan_pull, pull_configs
from mmfreeze.recipes.discovery import RecipeFinder
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import display_path

PULL_EPILOG = (
    "Writes <configs>/<org>/<name>/config.json (the Hub's file, unchanged) and, beside it, "
    f"{RECORD_FILE} with the commit it came from. Ids already in a local directory, the configs folder or "
    "the bundled registry are not fetched, so a second pull fetches nothing. Uses HF_ENDPOINT and HF_TOKEN. "
    f"With HF_HUB_OFFLINE set, or a hub that refuses the connection or does not answer within {HUB_ANSWER_SECONDS:g} s, "
    "each config is copied from the local Hugging Face cache (HF_HUB_CACHE), at the commit its refs/main records, "
    "and recorded as from the cache; an id the cache lacks fails. "
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
    """Pull the config.json of every model the recipes under PATHS name and no carried source has: from
    the Hub, or offline from the local Hugging Face cache."""
    settings = repository_settings(paths, configs=configs)
    if settings.configs is None:
        raise click.UsageError(
            f"no configs folder: set `configs = \"model_configs\"` under [tool.mmfreeze] in "
            f"{settings.pyproject or settings.root / 'pyproject.toml'}, or pass --configs DIR"
        )
    finder = RecipeFinder(root=settings.root, exclude=settings.exclude, documents=YamlDocuments(settings.root))
    try:
        discovery = finder.discover(paths)
    except MmfreezeError as error:
        report_error(error)
        raise SystemExit(ExitCode.INPUT_ERROR) from None
    require_recipes_in_each(paths, discovery)
    plan = plan_pull(discovery.recipes, configs_dir=settings.configs,
                     read_model=recipe_model_reader(finder.documents, root=settings.root),
                     local_models=settings.local_models)
    for error in plan.errors:
        report_error(error)
    offline = bool(plan.missing) and _offline()
    failed = 0
    for outcome in pull_configs(list(plan.missing), settings.configs, offline=offline):
        if isinstance(outcome, Pulled):
            origin = " from the hub cache" if outcome.source == "hf-cache" else ""
            out.print(f"pulled {escape(outcome.model_id)} @ {outcome.revision[:12]}{origin} -> "
                      f"{escape(display_path(outcome.config_file))}")
        else:
            failed += 1
            report_error(outcome)
    print_skipped(discovery, settings)
    pulled = len(plan.missing) - failed
    err.print(f"[bold]configs[/]: {pulled} pulled, {failed} failed, {len(plan.available)} already available "
              f"(into {escape(display_path(settings.configs))})")
    raise SystemExit(ExitCode.INPUT_ERROR if failed or plan.errors else ExitCode.OK)


def _offline() -> bool:
    """Whether this pull reads the hub cache instead of the hub, said once on stderr when so."""
    cache = escape(str(hub_cache_folder(None)))
    if hub_offline():
        err.print(f"{OFFLINE_VARIABLE} is set: configs are copied from the hub cache {cache}, not asked of the hub")
        return True
    endpoint = hub_endpoint()
    why = hub_unreachable(endpoint)
    if why is not None:
        err.print(f"the hub at {escape(endpoint)} cannot be reached ({escape(why)}): configs are copied from the hub "
                  f"cache {cache} instead. Set HF_ENDPOINT to a hub this machine reaches to pull from a hub")
    return why is not None
