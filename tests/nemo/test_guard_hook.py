"""Under the integration the guard arms on torch's public hooks, whatever builds the optimizer (issue
41), and the framework functions a recipe needs are replaced, and restored, all or none."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.exceptions import IntegrationError
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]

NEEDS_EVERYTHING = """\
model: {}
freeze_config:
  vision: {tower: true}
optimizer:
  param_group_overrides:
    - {role: vision.projector, lr_mult: 10.0}
distributed:
  multimodal:
    audio: {frozen_sharding: replicate}
"""


def test_without_a_recipe_the_default_guard_refuses_at_install() -> None:
    from mmfreeze import nemo

    with pytest.raises(IntegrationError, match="the guard needs the recipe file"):
        nemo.install()
    assert nemo.installed() is None


def test_the_guard_arms_through_torch_and_the_recipe_key_turns_it_off(tmp_path: Path) -> None:
    from mmfreeze import nemo

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\n")
    installation = nemo.install(recipe)
    try:
        assert installation.guard is not None and len(installation.guard.handles) == 1
        assert installation.patches == ()
    finally:
        installation.uninstall()
    recipe.write_text("model: {}\nmmfreeze: {guard: false}\n")
    installation = nemo.install(recipe)
    try:
        assert installation.guard is None
    finally:
        installation.uninstall()


def test_install_twice_is_refused_and_uninstall_restores_every_framework_function(tmp_path: Path) -> None:
    from mmfreeze import nemo
    from mmfreeze.nemo.hooks import resolve
    from mmfreeze.boundary.hook_points import HOOK_GROUPS

    HOOK_POINTS = [point for points in HOOK_GROUPS.values() for point in points]  # noqa: N806

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(NEEDS_EVERYTHING)
    originals = [resolve(point)[2] for point in HOOK_POINTS]
    installation = nemo.install(recipe, guard=False)
    try:
        assert installation.context.needs == {"freeze", "rates", "distributed"}
        assert all(resolve(point)[2] is not original for point, original in zip(HOOK_POINTS, originals))
        with pytest.raises(IntegrationError, match="already installed"):
            nemo.install(recipe, guard=False)
    finally:
        installation.uninstall()
    assert [resolve(point)[2] for point in HOOK_POINTS] == originals
    assert nemo.installed() is None
