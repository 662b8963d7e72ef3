"""Options several commands share, defined once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from mmfreeze.cli.console import report_error
from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.disk_cache import cache_directory
from mmfreeze.exceptions import RecipeError, SettingsError
from mmfreeze.recipes.targets import parse_target_assignment
from mmfreeze.settings import BUILDER_SETTINGS, FALLBACK_SETTINGS, Settings, find_settings
from mmfreeze.snapshots.store import recorded_renames
from mmfreeze.workspace import Workspace


def model_loading_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--allow-network, --allow-target, --configs and --cache-dir / --no-cache."""
    decorators = [
        click.option("--allow-network", is_flag=True, help="Fetch config.json from the Hugging Face hub when no offline source has it."),
        click.option("--allow-target", "allow_targets", multiple=True, metavar="TARGET=AutoModelFor...", help="Accept another model._target_ (repeatable; adds to [tool.mmfreeze] allow_targets); it is mapped, never imported."),
        configs_option,
        click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), default=None, help="Cache folder for model structures and frozen sets (default: $MMFREEZE_CACHE_DIR or ~/.cache/mmfreeze)."),
        click.option("--no-cache", is_flag=True, help="Build every model; read and write no on-disk cache."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


configs_option = click.option(
    "--configs", type=click.Path(path_type=Path, file_okay=False), default=None,
    help="Model-config folder, <org>/<name>/config.json per model id (default: [tool.mmfreeze] configs).",
)


def builder_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--builder and --builder-fallback (override [tool.mmfreeze] builder / builder_fallback)."""
    decorators = [
        click.option("--builder", type=click.Choice(BUILDER_SETTINGS), default=None, help="What builds the models: framework (NeMo AutoModel's own class where it has one), transformers, or auto (the framework when it is installed with the transformers it requires) (default: [tool.mmfreeze] builder, else auto)."),
        click.option("--builder-fallback", type=click.Choice(FALLBACK_SETTINGS), default=None, help="transformers: build the transformers class where the framework's cannot be built on meta, and say why in the snapshot header (default: [tool.mmfreeze] builder_fallback, else none)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def command_workspace(
    settings: Settings, *, cache_dir: Path | None = None, no_cache: bool = False, allow_network: bool = False,
    roundtrip: bool = False,
) -> Workspace:
    """The command's run context (:class:`~mmfreeze.workspace.Workspace`), assembled once; asking for a
    framework builder that is not installed is a usage error."""
    try:
        return Workspace.of(settings, cache_dir=cache_directory(cache_dir, no_cache), records=recorded_renames(settings),
                            allow_network=allow_network, roundtrip=roundtrip)
    except SettingsError as error:
        report_error(error)
        raise SystemExit(ExitCode.USAGE) from None


workers_option = click.option(
    "--workers", type=click.IntRange(min=1), default=None,
    help="Worker processes for building models missing from the cache (default: available cores).",
)
"""--workers: processes that build distinct model configs on a cold cache."""


def repository_settings(
    paths: Sequence[Path], *, configs: Path | None = None, snapshots: Path | None = None,
    allow_targets: Sequence[str] = (), builder: Any = None, builder_fallback: Any = None,
) -> Settings:
    """The ``[tool.mmfreeze]`` settings of the repository holding ``paths``, with the command-line
    values on top. Invalid settings or a malformed --allow-target are a usage error (exit 2)."""
    try:
        return find_settings(paths).overridden(
            configs=configs, snapshots=snapshots, allow_targets=[parse_target_assignment(text) for text in allow_targets],
            builder=builder, builder_fallback=builder_fallback,
        )
    except (SettingsError, RecipeError) as error:
        report_error(error)
        raise SystemExit(ExitCode.USAGE) from None
