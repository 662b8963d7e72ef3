"""Shared fixtures: every test runs with its own empty structure cache, never the user's."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIGS = REPO_ROOT / "example_configs"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMFREEZE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "mmfreeze-cache"))

# The corpus as it was before `mmfreeze migrate example_configs` (legacy vocabulary), kept so the
# legacy engine and the migration stay tested on it.
LEGACY_CORPUS = REPO_ROOT / "tests" / "migrate" / "fixtures" / "pre_migration"

REQUIRE_FRAMEWORK_TESTS = "MMFREEZE_REQUIRE_FRAMEWORK_TESTS"
"""Set to 1 by `.ci/framework_env`: there a skipped `framework` test is a failure, since that
environment exists to run them (a moved pin would otherwise skip them and stay green)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    import os

    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_FRAMEWORK_TESTS) == "1" and item.get_closest_marker("framework"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"a framework test was skipped in the framework environment ({REQUIRE_FRAMEWORK_TESTS}=1): {reason}"
