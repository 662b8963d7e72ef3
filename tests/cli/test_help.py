"""The command-line surface changes only on purpose: every `--help` is a reviewed snapshot."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import COMMANDS, cli


@pytest.mark.parametrize("command", [[], *([name] for name in sorted(COMMANDS))], ids=lambda c: " ".join(c) or "mmfreeze")
def test_help_text(command: list[str], snapshot: Any) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"], prog_name="mmfreeze", terminal_width=100)
    assert result.exit_code == 0
    assert result.output == snapshot
