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
