"""The legacy engine's rules on small models whose names we choose (real-model accidents: test_legacy_models.py)."""

from __future__ import annotations

import pytest
from torch import nn

from mmfreeze.freeze.apply import apply_legacy_freeze_config
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.models.structure import structure_of


class Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(2, 2)          # the root attribute `vision_tower` returns this
        self.visual_merger = nn.Linear(2, 2)
        self.Speech_Adapter = nn.Linear(2, 2)   # upper case: matched after lowercasing
        self.decoder = nn.Linear(2, 2)
        self.patch_generator = nn.Module()
        self.patch_generator.video_embedder = nn.Linear(2, 2)

    @property
    def vision_tower(self) -> nn.Module:
        return self.encoder


def frozen(config: dict | None) -> set[str]:
    return set(plan_legacy_freeze(structure_of(Toy()), config).frozen)


def test_absent_section_freezes_nothing() -> None:
    assert frozen(None) == set()


def test_empty_section_freezes_vision_by_default() -> None:
    assert frozen({}) == {"encoder.weight", "encoder.bias", "visual_merger.weight", "visual_merger.bias"}


def test_vision_flag_uses_root_attribute_and_substrings() -> None:
    plan = plan_legacy_freeze(structure_of(Toy()), {"freeze_vision_tower": True})
    assert plan.rules_by_parameter["encoder.weight"] == ("freeze_vision_tower: root attribute 'vision_tower'",)
    assert plan.rules_by_parameter["visual_merger.weight"] == ("freeze_vision_tower: module name contains 'visual'",)


def test_substring_match_is_case_insensitive() -> None:
    assert frozen({"freeze_vision_tower": False, "freeze_audio_tower": True}) == {"Speech_Adapter.weight", "Speech_Adapter.bias"}


def test_values_count_by_truthiness_not_by_type() -> None:
    assert frozen({"freeze_vision_tower": "false"}) == frozen({"freeze_vision_tower": True})
    assert frozen({"freeze_vision_tower": 0}) == set()


def test_video_embedder_flag_matches_parameter_names() -> None:
    assert frozen({"freeze_vision_tower": False, "freeze_video_embedder": True}) == {
        "patch_generator.video_embedder.weight", "patch_generator.video_embedder.bias"}


@pytest.mark.parametrize("ignored", [{"freeze_embeddings": True}, {"freeze_everything": True}, {"unfreeze": "all"}])
def test_freeze_embeddings_and_unknown_keys_are_ignored(ignored: dict) -> None:
    assert frozen({"freeze_vision_tower": False, **ignored}) == set()


def test_apply_never_unfreezes_and_returns_what_it_froze() -> None:
    model = Toy()
    model.decoder.weight.requires_grad_(False)
    result = apply_legacy_freeze_config(model, {"freeze_vision_tower": False})
    assert result.plan.frozen == frozenset() and result.frozen == {"decoder.weight"}
    assert not model.decoder.weight.requires_grad
    apply_legacy_freeze_config(model, {})
    assert not model.encoder.weight.requires_grad and model.decoder.bias.requires_grad
