"""The command-line surface changes only on purpose: every `--help` is a reviewed snapshot."""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import COMMANDS, cli


def command_paths() -> list[list[str]]:
    """Every command, and every subcommand of a command group (`configs pull`)."""
    paths: list[list[str]] = [[]]
    for name in sorted(COMMANDS):
        paths.append([name])
        command = cli.get_command(click.Context(cli), name)
        if isinstance(command, click.Group):
            paths += [[name, sub] for sub in sorted(command.commands)]
    return paths


@pytest.mark.parametrize("command", command_paths(), ids=lambda c: " ".join(c) or "mmfreeze")
def test_help_text(command: list[str], snapshot: Any) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"], prog_name="mmfreeze", terminal_width=100)
    assert result.exit_code == 0
    assert result.output == snapshot
