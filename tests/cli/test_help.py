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


@pytest.mark.parametrize(("command", "codes"), [
    (["migrate"], "Exit codes: 0 ok, 1 changed, 2 usage, 3 input error"),
    (["explain"], "Exit codes: 0 ok, 2 usage, 3 input error, 6 rejected"),
    (["snapshot"], "0 ok, 1 changed, 2 usage, 3 input error, 4 missing, 5 orphaned, 7 version only, 8 renamed, "
                   "9 probe only, 10 builder switch, 130 interrupted"),
])
def test_each_commands_help_lists_only_the_exit_codes_it_returns(command: list[str], codes: str) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"], prog_name="mmfreeze", terminal_width=10_000)
    assert codes in " ".join(result.output.split())
    assert ("4 missing" in result.output) == (command == ["snapshot"])
