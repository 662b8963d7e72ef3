"""Recipe discovery as the batch commands report it: a path without a recipe is a usage error, and
counted lines on standard error close the run: what discovery skipped, and the model ids that have
no config anywhere (listed once, not once per recipe)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import click
from rich.markup import escape

from mmfreeze.cli.console import err
from mmfreeze.models.config_sources import missing_configs_summary
from mmfreeze.counts import plural
from mmfreeze.recipes.discovery import Discovery
from mmfreeze.recipes.recipe import display_path
from mmfreeze.settings import Settings


def require_recipes_in_each(paths: Sequence[Path], discovery: Discovery) -> None:
    """A path without a single recipe is a wrong path, not a clean run: usage error (exit 2)."""
    for path in paths:
        found = discovery.under(path)
        if not found.recipes:
            raise click.UsageError(f"{path} {found.why_no_recipe()}; check the path")


def print_skipped(discovery: Discovery, settings: Settings, *, shown: int = 3) -> None:
    """On standard error: ``2 YAML files skipped: no `model:` section (a.yaml, b.yaml)``, then the exclusions."""
    if discovery.not_recipes:
        names = [display_path(path, settings.root) for path in discovery.not_recipes]
        listed = ", ".join(names[:shown]) + (", …" if len(names) > shown else "")
        err.print(f"{plural(len(names), 'YAML file')} skipped: no `model:` section ({listed})", markup=False)
    if discovery.excluded:
        err.print(f"{plural(len(discovery.excluded), 'recipe')} excluded by {settings.describe('exclude')}",
                  markup=False)


def report_missing_configs(missing: Mapping[str, Sequence[str]], settings: Settings, paths: Sequence[Path]) -> None:
    summary = missing_configs_summary(missing, configs_dir=settings.configs, paths=[str(path) for path in paths])
    err.print(f"[bold red]error[/]: {escape(summary)}")
