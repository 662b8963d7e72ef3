"""The check is a plain call chain: `mmfreeze snapshot --check example_configs` in a fresh process
never imports pytest or syrupy (issue 47), and reports every bundled recipe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT, recipes_under

pytestmark = pytest.mark.slow  # the whole corpus, in a fresh process

CHECK_THEN_SAY_WHAT_WAS_IMPORTED = """
import atexit, sys
atexit.register(lambda: sys.stderr.write(
    "\\nimported test frameworks: " + repr(sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "syrupy"))) + "\\n"))
from mmfreeze.cli.main import cli
cli()
"""


def test_the_corpus_check_in_a_fresh_process_never_imports_pytest(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-c", CHECK_THEN_SAY_WHAT_WAS_IMPORTED, "snapshot", "--check", "-q", "--report", "json",
         "--report-file", str(report), "example_configs"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    assert "imported test frameworks: []\n" in result.stderr, result.stderr
    # exit 0 where the snapshots are made; elsewhere the builder's difference (tests/cli/test_bundled_snapshots.py)
    assert result.returncode in (ExitCode.OK, ExitCode.BUILDER_SWITCH), result.stderr
    reported = {entry["recipe"] for entry in json.loads(report.read_text())["recipes"]}
    assert reported == {path.relative_to(REPO_ROOT).as_posix() for path in recipes_under(EXAMPLE_CONFIGS)}
