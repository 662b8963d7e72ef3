"""Quiet by default (issue 48 item 7): the warnings nemo-automodel's dependencies print as they import
(torchao's pytree registrations, megatron-fsdp without Transformer Engine) are hidden from every
mmfreeze command, and `mmfreeze --verbose` shows them. Run in a fresh process, where the framework
is imported for the first time; the framework environment has those dependencies (where the test
environment lacks them, nothing is printed to hide: the test skips there before it starts a command;
`.ci/framework_env` fails on a skipped framework test)."""

from __future__ import annotations

import subprocess

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.conftest import MMFREEZE, REPO_ROOT
from tests.nemo.framework_env import requires_framework

pytestmark = pytest.mark.framework

RECIPE = "example_configs/vlm_finetune/qwen3_vl/qwen3_vl_8b_cord_v2.yaml"
NOISE = ("torch/utils/_pytree.py", "torch/utils/cpp_extension.py", "UserWarning", "warnings.warn(")


def run(command: list[str], *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MMFREEZE, *options, *command], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("command", [
    ["explain", "--no-cache", RECIPE],
    # a cold check: the build workers import and probe the framework's classes
    ["snapshot", "--check", "--no-cache", "--report", "json", RECIPE],
], ids=["explain", "cold snapshot check"])
@requires_framework
def test_the_framework_prints_nothing_through_a_command_unless_verbose(command: list[str]) -> None:
    verbose = run(command, "--verbose")
    assert verbose.returncode in (ExitCode.OK, ExitCode.BUILDER_SWITCH), verbose.stderr
    if not any(noise in verbose.stderr for noise in NOISE):
        pytest.skip("the framework's dependencies print nothing here (no torchao, no megatron-fsdp)")
    quiet = run(command)
    assert quiet.returncode == verbose.returncode, quiet.stderr
    assert not [line for line in quiet.stderr.splitlines() if any(noise in line for noise in NOISE)], quiet.stderr
    assert quiet.stdout == verbose.stdout
