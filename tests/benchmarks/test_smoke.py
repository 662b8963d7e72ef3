"""CI runs the benchmark scripts: corpus_check.py in its smoke mode, resolver_coverage.py in full (it has
no quick mode); they must work, nothing timed is judged here, only the coverage floor."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def run_script(*args: str) -> str:
    completed = subprocess.run(
        [sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_corpus_check_benchmark_runs_every_measurement_in_smoke_mode() -> None:
    output = run_script("benchmarks/corpus_check.py", "--smoke")
    for step in ("1. naive", "2. floor", "3. warm check", "4. migrate --check", "5. peak memory", "6. cold check of"):
        assert step in output, output
    assert "exit 0" in output and "imported when warm: no" in output


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_resolver_coverage_report_verifies_at_least_100_multimodal_classes() -> None:
    output = run_script("benchmarks/resolver_coverage.py")
    verified = int(output.split("verified ", 1)[1].split(" ", 1)[0])
    assert verified >= 100, output
