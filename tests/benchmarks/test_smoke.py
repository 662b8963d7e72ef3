"""CI runs the benchmark scripts in their smoke modes: they must work; nothing timed is judged here. The
coverage floor is judged over every table entry by tests/resolver/test_table_coverage.py."""

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
def test_resolver_coverage_benchmark_reports_the_classes_it_checks_in_smoke_mode() -> None:
    output = run_script("benchmarks/resolver_coverage.py", "--smoke")
    assert "verified " in output and " multimodal candidate classes" in output, output
    assert "framework classes: not checked here" in output or "framework (" in output, output
