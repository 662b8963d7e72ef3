"""Issue #22: a failure this machine caused is never cached; fix the machine and the next run builds.

The fault is a package that does not import. It is caused with a stand-in ``timm`` package first
on ``PYTHONPATH`` whose import raises ``ImportError``: uninstalling timm from the shared test
environment is not an option, and Python's own import machinery raises the error for real.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.models.build import environment_error
from tests.conftest import MAIN_TRANSFORMERS, REPO_ROOT

RECIPE = "example_configs/vlm_finetune/gemma3n/gemma3n_e4b_cord_v2.yaml"  # its vision tower is timm's


def snapshot_check(cache: Path, *, python_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MMFREEZE_CACHE_DIR": str(cache)}
    env.pop("PYTHONPATH", None)
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)
    # the transformers classes' snapshot of this release: the committed one is the framework's under its pin
    snapshots = REPO_ROOT / "tests" / "snapshots" / "fixtures" / f"transformers-{MAIN_TRANSFORMERS}"
    return subprocess.run([sys.executable, "-m", "mmfreeze", "snapshot", "--check", "--progress",
                           "--snapshot-dir", str(snapshots), RECIPE],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_an_import_error_is_reported_not_cached_and_the_next_run_builds(tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "timm"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("timm cannot load its native parts", name="timm")\n')
    cache = tmp_path / "cache"

    failed = snapshot_check(cache, python_path=broken.parent)
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert ("a package it needs does not import here (timm: timm cannot load its native parts); "
            "install it: pip install 'mmfreeze[timm]'") in failed.stdout
    assert "Traceback" not in failed.stdout + failed.stderr

    fixed = snapshot_check(cache)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "built google/gemma-3n-E4B-it (Gemma3nForConditionalGeneration)" in fixed.stderr
    assert "snapshots (check): 1 passed" in fixed.stderr


@pytest.mark.parametrize("package", ["transformers", "torch", "torchvision", "timm"])
def test_another_version_of_a_package_that_shapes_a_build_is_another_structure(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmfreeze.models import cache

    config = {"model_type": "gemma3n"}
    before = cache.structure_key(config, "AutoModelForImageTextToText")
    # A mock: another release of the package cannot be installed beside the tested one.
    real = cache.installed_version
    monkeypatch.setattr(cache, "installed_version", lambda name: "0.0.1" if name == package else real(name))
    assert cache.structure_key(config, "AutoModelForImageTextToText") != before


def test_transformers_missing_backend_error_names_the_package_and_the_extra() -> None:
    """transformers' ``requires_backends`` raises an ImportError with no ``name`` whose text starts
    with a blank line; the report still names timm and the extra that installs it."""
    from transformers.utils.import_utils import BACKENDS_MAPPING

    error = ImportError(BACKENDS_MAPPING["timm"][1].format("TimmWrapperModel"))
    message = str(environment_error("transformers could not build Gemma3nForConditionalGeneration", error))
    assert message == (
        "transformers could not build Gemma3nForConditionalGeneration: a package it needs does not import here "
        "(timm: TimmWrapperModel requires the timm library but it was not found in your environment. You can "
        "install it with pip:); install it: pip install 'mmfreeze[timm]'"
    )
