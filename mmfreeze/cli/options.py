"""Options several commands share, defined once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from mmfreeze.disk_cache import cache_directory
from mmfreeze.models.cache import StructureCache
from mmfreeze.recipes.targets import DEFAULT_TARGETS, parse_target_assignment


def model_loading_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--allow-network, --allow-target and --cache-dir / --no-cache."""
    decorators = [
        click.option("--allow-network", is_flag=True, help="Fetch config.json from the Hugging Face hub when no offline source has it."),
        click.option("--allow-target", "allow_targets", multiple=True, metavar="TARGET=AutoModelFor...", help="Accept another model._target_ (repeatable); it is mapped, never imported."),
        click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), default=None, help="Cache folder for model structures and frozen sets (default: $MMFREEZE_CACHE_DIR or ~/.cache/mmfreeze)."),
        click.option("--no-cache", is_flag=True, help="Build every model; read and write no on-disk cache."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def workers_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--workers: processes that build distinct model configs on a cold cache."""
    return click.option(
        "--workers", type=click.IntRange(min=1), default=None,
        help="Worker processes for building models missing from the cache (default: available cores).",
    )(command)


def allowed_targets(extra: Sequence[str]) -> dict[str, str]:
    targets = dict(DEFAULT_TARGETS)
    targets.update(parse_target_assignment(text) for text in extra)
    return targets


def structure_cache(cache_dir: Path | None, no_cache: bool) -> StructureCache:
    return StructureCache(cache_directory(cache_dir, no_cache))
