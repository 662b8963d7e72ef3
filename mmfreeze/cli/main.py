"""The `mmfreeze` click group. Commands are added explicitly here: no import-time registration."""

from __future__ import annotations

import click

from mmfreeze import __version__
from mmfreeze.cli.explain import explain
from mmfreeze.cli.migrate import migrate
from mmfreeze.cli.snapshot import snapshot


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mmfreeze")
def cli() -> None:
    """Which parameters every multimodal training recipe freezes, and a safe migration of freeze_config."""


cli.add_command(explain)
cli.add_command(migrate)
cli.add_command(snapshot)


def main() -> None:
    cli()
