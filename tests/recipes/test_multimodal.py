from __future__ import annotations

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.multimodal import parse_module_overrides
from mmfreeze.resolver.spec import MultimodalModuleSpec


def test_override_list_becomes_specs_with_documented_defaults() -> None:
    document = {"multimodal": {"modules": [{"path": "connector", "role": "resampler"}]}}
    assert parse_module_overrides(document, source="r.yaml") == (
        MultimodalModuleSpec(path="connector", modality="vision", role="resampler", conditionally_executed=True),
    )


def test_absent_section_means_no_overrides() -> None:
    assert parse_module_overrides({}, source="r.yaml") == ()


@pytest.mark.parametrize(
    ("section", "key"),
    [({"modules": [{"modality": "vision"}]}, "multimodal.modules[0]"),
     ({"modules": [{"path": "x", "rol": "tower"}]}, "multimodal.modules[0]"),
     ({"modules": [{"path": "x", "conditionally_executed": "yes"}]}, "multimodal.modules[0].conditionally_executed"),
     ({"module": []}, "multimodal")],
)
def test_malformed_overrides_name_the_key(section: dict, key: str) -> None:
    with pytest.raises(RecipeError) as caught:
        parse_module_overrides({"multimodal": section}, source="r.yaml")
    assert caught.value.key == key
