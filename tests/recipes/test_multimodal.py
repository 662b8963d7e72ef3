from __future__ import annotations

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.multimodal import ModuleOverride, read_module_overrides


def test_override_list_is_read_with_documented_defaults() -> None:
    document = {"multimodal": {"modules": [{"path": "connector", "modality": "vision", "role": "resampler"}]}}
    assert read_module_overrides(document, source="r.yaml") == (
        ModuleOverride(path="connector", modality="vision", role="resampler", conditionally_executed=True),
    )


def test_absent_section_means_no_overrides() -> None:
    assert read_module_overrides({}, source="r.yaml") == ()


@pytest.mark.parametrize(
    ("section", "key"),
    [({"modules": [{"modality": "vision"}]}, "multimodal.modules[0]"),
     ({"modules": [{"path": "x", "modality": "vision", "rol": "tower"}]}, "multimodal.modules[0]"),
     ({"modules": [{"path": "x", "modality": "vision", "conditionally_executed": "yes"}]},
      "multimodal.modules[0].conditionally_executed"),
     ({"module": []}, "multimodal")],
)
def test_malformed_overrides_name_the_key(section: dict, key: str) -> None:
    with pytest.raises(RecipeError) as caught:
        read_module_overrides({"multimodal": section}, source="r.yaml")
    assert caught.value.key == key


def test_an_override_without_modality_is_an_error_listing_the_modalities() -> None:
    """No silent default: a module without `modality` would otherwise be counted as vision."""
    document = {"multimodal": {"modules": [{"path": "connector", "role": "resampler"}]}}
    with pytest.raises(RecipeError) as caught:
        read_module_overrides(document, source="r.yaml")
    assert (caught.value.source, caught.value.key) == ("r.yaml", "multimodal.modules[0].modality")
    assert "vision, audio, video" in caught.value.message
