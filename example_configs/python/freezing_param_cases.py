"""Team unit tests for freezing (parsed by mmfreeze, never executed)."""
import pytest

from mmfreeze.freeze import apply_freeze_config


@pytest.mark.parametrize(
    "freeze_config",
    [
        {"vision": {"tower": True}, "language_model": False},
        {"vision": {"tower": True}, "language_model": False},
        {"vision": {"tower": False}, "language_model": True},
        {"vision": {"tower": True}, "audio": {"tower": True}, "language_model": False},
    ],
)
def test_freezing_only_clears_requires_grad(tiny_vlm, freeze_config):
    apply_freeze_config(tiny_vlm, freeze_config)
    assert any(p.requires_grad for p in tiny_vlm.parameters())
