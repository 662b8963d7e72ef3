"""benchmarks/verify_cost.py runs (quick mode); its figures are in benchmarks/RESULTS.md."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.guard.helpers import REPO


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_verify_cost_benchmark_runs_in_smoke_mode():
    done = subprocess.run([sys.executable, "benchmarks/verify_cost.py", "--smoke"], cwd=REPO,
                          capture_output=True, text=True, timeout=280)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "| SmolVLM2-2.2B, LoRA | 2.3 B | 753 (657) |" in done.stdout
    assert "first call of the process (imports the guard)" in done.stdout
    assert "2 gloo ranks, small model" in done.stdout and "with the rank exchange" in done.stdout
