"""Whether this environment has nemo-automodel with every dependency its training code imports."""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, requires, version

import pytest
from packaging.requirements import Requirement


def _missing_dependencies() -> list[str]:
    """The distributions nemo-automodel requires (no extra) that are not installed: read from
    metadata, so the test environment (installed with --no-deps) knows without importing the
    framework's training code, which takes seconds before it fails on the first missing one."""
    missing = []
    for line in requires("nemo-automodel") or ():
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            version(requirement.name)
        except PackageNotFoundError:
            missing.append(requirement.name)
    return missing


def _framework_importable() -> bool:
    if importlib.util.find_spec("nemo_automodel") is None or _missing_dependencies():
        return False
    try:
        importlib.import_module("nemo_automodel._transformers.infrastructure")
    except ImportError:
        return False
    return True


FRAMEWORK_IMPORTABLE = _framework_importable()
requires_framework = pytest.mark.skipif(
    not FRAMEWORK_IMPORTABLE,
    reason="needs nemo-automodel with all its dependencies (.venv-framework, made by .ci/framework_env)")
once_per_framework_release = pytest.mark.skipif(
    not FRAMEWORK_IMPORTABLE,
    reason="a model-by-model matrix against the framework runs once per framework release: in nemo-automodel "
           "0.7.0's own environment (.ci/framework_env), not again where it is installed without its dependencies")
"""For the model-by-model matrices against the framework's functions (the differential, the optimizer
groups): the test environment has the same nemo-automodel release, so running them there too would
run the same matrix twice for one release. `.ci/framework_env` fails on a skipped framework test."""
