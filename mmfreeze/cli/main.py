"""The `mmfreeze` click group. Its commands are listed explicitly here: no import-time registration."""

from __future__ import annotations

import importlib
import os

import click

from mmfreeze import __version__
from mmfreeze.settings import VERBOSE_ENV

# Command name -> "module:attribute". Each command is imported only when it runs, so a warm
# `snapshot --check` in CI does not pay for libcst and the migration rules it never uses.
COMMANDS = {name: f"mmfreeze.cli.{name}:{name}" for name in ("configs", "explain", "migrate", "snapshot", "train")}


class CommandTable(click.Group):
    """A click group whose commands come from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name].split(":")
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=CommandTable, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mmfreeze")
@click.option("--verbose", is_flag=True,
              help="Also show the warnings dependencies print as they import (torchao, megatron-fsdp): hidden by default.")
def cli(verbose: bool) -> None:
    """Which parameters every multimodal training recipe freezes, and a safe migration of freeze_config."""
    if verbose:
        os.environ[VERBOSE_ENV] = "1"  # build workers inherit it


def main() -> None:
    cli()
