"""Issue #21: under the integration every optimizer nemo-automodel 0.7.0 builds is armed with the
guard (on by default), through each optimizer config class that has a ``build`` of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.exceptions import IntegrationError
from mmfreeze.nemo.guard import ARMED
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]


def build_optimizers(config_name: str, **fields):
    import torch.nn as nn
    from nemo_automodel.components.optim import optimizer

    return getattr(optimizer, config_name)(**fields).build(nn.Linear(2, 2))


def test_without_a_recipe_the_default_guard_refuses_at_the_optimizer_build() -> None:
    from mmfreeze import nemo

    installation = nemo.install()
    try:
        with pytest.raises(IntegrationError, match="the guard needs the recipe file"):
            build_optimizers("AdamWConfig")
    finally:
        installation.uninstall()


@pytest.mark.parametrize(("config_name", "fields"), [
    ("AdamWConfig", {}),
    ("OptimizerFromFactoryConfig", {"factory": "torch.optim.SGD", "kwargs": {"lr": 0.1}}),
])
def test_every_built_optimizer_is_armed_unless_the_guard_is_off(config_name: str, fields: dict, tmp_path: Path) -> None:
    import torch

    from mmfreeze import nemo

    if "factory" in fields:
        fields = {**fields, "factory": torch.optim.SGD}
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\n")
    installation = nemo.install(recipe)
    try:
        assert all(getattr(opt, ARMED, False) for opt in build_optimizers(config_name, **fields))
    finally:
        installation.uninstall()
    recipe.write_text("model: {}\nmmfreeze: {guard: false}\n")
    installation = nemo.install(recipe)
    try:
        assert not any(getattr(opt, ARMED, False) for opt in build_optimizers(config_name, **fields))
    finally:
        installation.uninstall()


def test_install_twice_is_refused_and_uninstall_restores_every_framework_function() -> None:
    from mmfreeze import nemo
    from mmfreeze.nemo.hooks import resolve
    from mmfreeze.nemo.installation import HOOK_POINTS

    originals = [resolve(point)[2] for point in HOOK_POINTS]
    installation = nemo.install(guard=False)
    try:
        assert all(resolve(point)[2] is not original for point, original in zip(HOOK_POINTS, originals))
        with pytest.raises(IntegrationError, match="already installed"):
            nemo.install(guard=False)
    finally:
        installation.uninstall()
    assert [resolve(point)[2] for point in HOOK_POINTS] == originals
    assert nemo.installed() is None
