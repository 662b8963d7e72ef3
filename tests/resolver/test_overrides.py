from __future__ import annotations

from mmfreeze.recipes.multimodal import ModuleOverride
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.resolver.spec import MultimodalModuleSpec


def test_each_override_becomes_one_spec_in_the_recipes_order() -> None:
    overrides = (
        ModuleOverride(path="connector", modality="vision", role="resampler"),
        ModuleOverride(path="audio", modality="audio", role=None, conditionally_executed=False),
    )
    assert override_specs(overrides) == (
        MultimodalModuleSpec(path="connector", modality="vision", role="resampler", conditionally_executed=True),
        MultimodalModuleSpec(path="audio", modality="audio", role=None, conditionally_executed=False),
    )


def test_no_overrides_give_no_specs() -> None:
    assert override_specs(()) == ()
