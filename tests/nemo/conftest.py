"""Fixtures shared by the framework's training runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def class_runs_repository(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Path, dict[str, Any]]]:
    """Every class-run recipe, snapshotted once per test run: the repository and its recipes' documents."""
    from tests.nemo.class_runs.repository import make_repository

    root = tmp_path_factory.mktemp("class_runs")
    return root, make_repository(root)
