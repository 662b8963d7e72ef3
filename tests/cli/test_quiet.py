"""Quiet by default (issue 48 item 7): the warnings nemo-automodel's dependencies print as they import
(torchao's pytree registrations, megatron-fsdp without Transformer Engine) are hidden from every
mmfreeze command, and `mmfreeze --verbose` shows them. Run in a fresh process, where the framework
is imported for the first time; the framework environment has those dependencies (where the test
environment lacks them, nothing is printed to hide, and the test says so and skips; `.ci/framework_env`
fails on a skipped framework test)."""

from __future__ import annotations

import subprocess

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.conftest import MMFREEZE, REPO_ROOT

pytestmark = pytest.mark.framework

RECIPE = "example_configs/vlm_finetune/qwen3_vl/qwen3_vl_8b_cord_v2.yaml"
NOISE = ("torch/utils/_pytree.py", "UserWarning", "warnings.warn(")


def explain(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MMFREEZE, *options, "explain", "--no-cache", RECIPE], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)


def test_the_framework_import_prints_nothing_unless_verbose() -> None:
    verbose = explain("--verbose")
    assert verbose.returncode == ExitCode.OK, verbose.stderr
    if not any(noise in verbose.stderr for noise in NOISE):
        pytest.skip("the framework's dependencies print nothing on import here (no torchao, no megatron-fsdp)")
    quiet = explain()
    assert quiet.returncode == ExitCode.OK, quiet.stderr
    assert not [line for line in quiet.stderr.splitlines() if any(noise in line for noise in NOISE)], quiet.stderr
    assert quiet.stdout == verbose.stdout
