"""Issue #22: the framework environment fails when its framework tests do not run.

Shown for real here: in the main environment the framework's training code does not import (it
is installed without its dependencies), so these tests skip; with the variable `.ci/framework_env`
sets, the same run fails and names why.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, REQUIRE_FRAMEWORK_TESTS
from tests.nemo.framework_env import FRAMEWORK_IMPORTABLE

SKIPPING = "tests/nemo/test_guard_hook.py"


def run_framework_tests(required: bool) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != REQUIRE_FRAMEWORK_TESTS}
    if required:
        env[REQUIRE_FRAMEWORK_TESTS] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "framework", SKIPPING],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.skipif(FRAMEWORK_IMPORTABLE, reason="needs an environment where the framework tests skip (the main one)")
def test_skipped_framework_tests_fail_the_run_only_where_they_are_required() -> None:
    assert run_framework_tests(required=False).returncode == 0
    required = run_framework_tests(required=True)
    assert required.returncode == 1
    assert "a framework test was skipped in the framework environment" in required.stdout
    assert "needs nemo-automodel with all its dependencies" in required.stdout


def test_the_framework_environment_requires_its_framework_tests() -> None:
    script = (REPO_ROOT / ".ci" / "framework_env").read_text()
    assert f'{REQUIRE_FRAMEWORK_TESTS}=1 "$VENV/bin/python" -m pytest -m "framework or resolver"' in script
