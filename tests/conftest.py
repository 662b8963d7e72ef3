"""Shared fixtures: each test run has its own structure cache, shared by its tests and workers, never the user's.
And what a test process costs: torch's threads per pytest-xdist worker, the collector between tests."""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

if TYPE_CHECKING:
    from mmfreeze.boundary.releases import FrameworkRules

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIGS = REPO_ROOT / "example_configs"

if (_workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))) > 1:
    # Each pytest-xdist worker gets its share of the cores for torch's threads (set before torch is
    # imported here, and inherited by what a test starts): with every worker using every core, their
    # real forwards and backwards wait on each other's threads (tests/reachability/test_probe.py,
    # test_composite_probe.py and tests/models/test_conversion.py on 2 workers: 80 s and 148 CPU-s
    # with 2 threads each, 42 s and 74 CPU-s with 1).
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0)) // _workers)))


def run_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test run's cache folder: pytest-xdist workers each get a folder below the run's, and share
    the run's cache (entries are renamed into place, so concurrent writers are safe). A test that
    builds what another test of the run builds takes it from here instead of building it again."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "mmfreeze-cache"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMFREEZE_CACHE_DIR", str(run_cache(tmp_path_factory)))

# The corpus as it was before `mmfreeze migrate example_configs` (legacy vocabulary), kept so the
# legacy engine and the migration stay tested on it.
LEGACY_CORPUS = REPO_ROOT / "tests" / "migrate" / "fixtures" / "pre_migration"


def legacy_rules() -> FrameworkRules:
    """The release the pre-migration corpus trained on, as its own `[tool.mmfreeze] framework` says (0.6)."""
    from mmfreeze.boundary.releases import framework_rules
    from mmfreeze.settings import find_settings

    return framework_rules(find_settings(cwd=LEGACY_CORPUS).framework)


def top_level_environment() -> dict[str, str]:
    """This process's environment without pytest-xdist's worker variables: a repository's own
    pytest run, started by a test, is a top-level run (syrupy would otherwise act as a worker)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST_")}


@cache
def recipes_under(folder: Path) -> tuple[Path, ...]:
    """Every recipe under ``folder``, found as the command line finds them (no exclusions); once per
    folder in a test process, since several modules parametrize over the same corpus."""
    from mmfreeze.recipes.discovery import RecipeFinder

    return RecipeFinder(root=REPO_ROOT).discover([folder]).recipes

MMFREEZE = [sys.executable, "-c", "from mmfreeze.cli.main import cli; cli()"]
"""The command line in a fresh process (each test's own pytest session, build workers, signals)."""

SNAPSHOT_TRANSFORMERS_VERSION = "5.18.0"
"""The transformers release the bundled snapshots are made with: where the bundled recipes train,
beside nemo-automodel 0.7.0 and its pin, with the framework's own classes (`.ci/framework_env`);
their headers say so, and the README's main job installs it."""
MAIN_TRANSFORMERS = "5.25.0"
"""The test environment's transformers (the README's test command pins it): the newest release the
rest allows. The bundled snapshots name the framework's pin instead (``SNAPSHOT_TRANSFORMERS_VERSION``)."""

REQUIRE_FRAMEWORK_TESTS = "MMFREEZE_REQUIRE_FRAMEWORK_TESTS"
"""Set to 1 by `.ci/framework_env`: there a skipped `framework` test is a failure, since that
environment exists to run them (a moved pin would otherwise skip them and stay green)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_FRAMEWORK_TESTS) == "1" and item.get_closest_marker("framework"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"a framework test was skipped in the framework environment ({REQUIRE_FRAMEWORK_TESTS}=1): {reason}"


FULL_COLLECTION_EVERY = 64
"""Tests between two full collections of everything (see ``pytest_runtest_protocol``)."""
_tests_run = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """After each test, what outlived it is frozen (``gc.freeze``): the libraries, the built models
    and the caches, most of a worker's heap, which live for the session. The collector's automatic
    full passes then walk only what the running test made (tests/framework/test_differential.py in one
    process, framework environment: 116-125 s of CPU before, 83-84 s after, two runs each). A cycle a
    test left behind would stay frozen, so every ``FULL_COLLECTION_EVERY`` tests everything is
    unfrozen and collected once."""
    global _tests_run
    yield
    _tests_run += 1
    if _tests_run % FULL_COLLECTION_EVERY == 0:
        gc.unfreeze()
        gc.collect()
    gc.freeze()


TALLY_PROPERTY = "differential_tally"
"""A differential test's cases compared with zero differences, by kind, as a report property:
added up from the reports, so the count is whole when pytest-xdist runs the tests in workers."""
TALLY: Counter[str] = Counter()
SUMMARY_LINE_PROPERTY = "summary_line"
"""A line a test asks to be printed at the end of the run (a measured count CI must show)."""
SUMMARY_LINES: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Reports reach this hook in the process that prints the summary, with or without pytest-xdist;
    # the teardown report carries the test's properties again.
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == TALLY_PROPERTY:
            TALLY.update(value)
        elif name == SUMMARY_LINE_PROPERTY:
            SUMMARY_LINES.append(value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The lines tests asked for, then how many differential cases matched the framework (the
    issues ask for the counts)."""
    for line in SUMMARY_LINES:
        terminalreporter.write_line(line)
    if not TALLY:
        return  # no differential test ran (or nemo-automodel is not installed)
    from tests.framework.oracle import installed_release

    kinds = ", ".join(f"{kind} {TALLY[kind]}" for kind in ("legacy", "selector", "lora", "rejection", "pre-0.7"))
    terminalreporter.write_line(
        f"differential vs nemo-automodel {installed_release()}: {TALLY['models']} models with zero differences "
        f"in every case; cases equal by kind: {kinds}"
    )
