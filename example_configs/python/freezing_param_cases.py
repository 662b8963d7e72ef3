"""Team unit tests for freezing (parsed by mmfreeze, never executed)."""
import pytest

from nemo_automodel.components.training.utils import apply_parameter_freezing


@pytest.mark.parametrize(
    "freeze_config",
    [
        {},
        {"freeze_vision_tower": True},
        {"freeze_vision_tower": False, "freeze_language_model": True},
        {"freeze_audio_tower": True, "freeze_embeddings": False},
    ],
)
def test_freezing_only_clears_requires_grad(tiny_vlm, freeze_config):
    apply_parameter_freezing(tiny_vlm, freeze_config)
    assert any(p.requires_grad for p in tiny_vlm.parameters())
