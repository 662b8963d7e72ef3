"""The README's quick start is the contract with a new user: CI must run exactly its test command."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT


def quick_start_commands() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", quick_start, flags=re.S)


def test_quick_start_has_exactly_two_commands_both_pinning_torch_first() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2
    for command in commands:
        assert "\n" not in command
        assert command.index("torch==2.14.1") < command.index("pip install -q -e")


def test_ci_runs_the_readme_test_command_and_nothing_else() -> None:
    ci_lines = [line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    assert ci_lines == [quick_start_commands()[1]]
