"""Issue #22: every nemo-automodel `_target_` in the default allowlist names a real constructor of
the installed framework (0.7.0 has no ``nemo_automodel.components._transformers.auto_model``)."""

from __future__ import annotations

import importlib

import pytest

from mmfreeze.recipes.targets import DEFAULT_TARGETS
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]

FRAMEWORK_TARGETS = sorted(target for target in DEFAULT_TARGETS if target.startswith("nemo_automodel"))


@pytest.mark.parametrize("target", FRAMEWORK_TARGETS)
def test_the_allowed_framework_target_exists(target: str) -> None:
    module, cls, constructor = target.rsplit(".", 2)
    assert callable(getattr(getattr(importlib.import_module(module), cls), constructor))


def test_the_allowlist_names_the_framework_targets_the_vlm_recipe_accepts() -> None:
    from nemo_automodel.recipes.vlm.finetune import _accepted_targets

    accepted = {f"{t.__self__.__module__}.{t.__self__.__name__}.{t.__name__}" for t in _accepted_targets()
                if hasattr(t, "__self__")}
    ours = {target.replace("nemo_automodel.", "nemo_automodel._transformers.auto_model.", 1)
            if target.count(".") == 2 else target for target in FRAMEWORK_TARGETS}
    assert accepted - {t for t in accepted if "Drafter" in t} <= ours
