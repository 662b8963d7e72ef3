"""An Auto class transformers has no class for is a cached fact (issue 47: migrate's cost): a Python
call site bound to a model id tries the Auto classes in turn, and a warm run learns which ones fail
from the cache instead of importing torch and transformers to find out again."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # two fresh processes, the first builds

BOUND = REPO_ROOT / "tests/migrate/fixtures/pre_migration/python/audio_finetune.py"
"""Bound to Qwen2-Audio and Voxtral: neither builds under AutoModelForImageTextToText, tried first."""
MIGRATE_THEN_SAY_IF_TORCH = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("\\ntorch imported: " + str("torch" in sys.modules) + "\\n"))
from mmfreeze.cli.main import cli
cli()
"""


def test_a_warm_migrate_of_a_call_site_bound_to_model_ids_imports_no_torch(tmp_path: Path) -> None:
    shutil.copy(BOUND, tmp_path / "audio_finetune.py")
    command = [sys.executable, "-c", MIGRATE_THEN_SAY_IF_TORCH, "migrate", "--check", "--cache-dir",
               str(tmp_path / "cache"), "audio_finetune.py"]
    cold = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    warm = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert cold.returncode == warm.returncode == ExitCode.CHANGED, cold.stderr + warm.stderr
    assert "torch imported: True" in cold.stderr  # the fault is real: finding the failing classes imports it
    assert "torch imported: False" in warm.stderr, warm.stderr
    assert cold.stdout == warm.stdout and (tmp_path / "cache" / "unbuildable").is_dir()
