"""Whether this environment has nemo-automodel with every dependency its training code imports."""

from __future__ import annotations

import importlib.util

import pytest


def _framework_importable() -> bool:
    if importlib.util.find_spec("nemo_automodel") is None:
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
