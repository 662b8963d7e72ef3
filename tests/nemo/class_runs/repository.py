"""A team repository holding every class-run recipe (``class_runs/recipes``), snapshotted once per
test run by `mmfreeze snapshot --update` (the tiny models are built there, once)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import MMFREEZE

CLASS_RUNS = Path(__file__).resolve().parent
MODELS = CLASS_RUNS.parent / "models"
MODELS_PLACEHOLDER = "MODELS/"
"""How a class-run recipe writes the bundled models folder (``tests/nemo/models``)."""


def make_repository(root: Path) -> dict[Path, dict[str, Any]]:
    """Write the recipes under ``root/recipes`` and snapshot them; each recipe's path -> its document."""
    # The tiny models live outside the team's repository: a setting names their folder in words.
    (root / "pyproject.toml").write_text(
        f'[tool.mmfreeze]\nsnapshots = "snapshots"\n[tool.mmfreeze.model_folders]\ntest_models = "{MODELS}"\n')
    (root / "recipes").mkdir()
    documents = {}
    for template in sorted((CLASS_RUNS / "recipes").glob("*.yaml")):
        text = template.read_text().replace(MODELS_PLACEHOLDER, f"{MODELS}/")
        (root / "recipes" / template.name).write_text(text)
        documents[root / "recipes" / template.name] = yaml.safe_load(text)
    snapshotted = subprocess.run([*MMFREEZE, "snapshot", "--update", "recipes"], cwd=root, capture_output=True,
                                 text=True, timeout=600)
    assert snapshotted.returncode == 0, snapshotted.stdout + snapshotted.stderr
    return documents
