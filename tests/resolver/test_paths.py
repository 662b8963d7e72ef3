"""Canonical path rules, before/after."""

from __future__ import annotations

import pytest

from mmfreeze.resolver.paths import canonical_class_name, canonical_path, peft_root_prefix


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("model.visual", "model.visual"),
        ("_orig_mod.model.visual", "model.visual"),
        ("model._fsdp_wrapped_module.visual", "model.visual"),
        ("model.layers.0._checkpoint_wrapped_module.mlp", "model.layers.0.mlp"),
    ],
)
def test_wrapper_segments_are_removed(raw, canonical):
    assert canonical_path(raw, peft_prefix=None) == canonical


def test_peft_prefix_and_base_layer_are_removed_only_under_peft():
    raw = "base_model.model.model.projector.linear_1.base_layer.weight"
    assert canonical_path(raw, peft_prefix="base_model.model") == "model.projector.linear_1.weight"
    assert canonical_path("model.base_layer", peft_prefix=None) == "model.base_layer"
    assert canonical_path("base_model", peft_prefix="base_model.model") is None


def test_peft_root_is_detected_from_class_names():
    assert peft_root_prefix({"": "PeftModelForCausalLM"}) == "base_model.model"
    assert peft_root_prefix({"": "LoraModel"}) == "model"
    assert peft_root_prefix({"": "LlavaForConditionalGeneration"}) is None


def test_fsdp2_generated_class_names_are_undone():
    assert canonical_class_name("FSDPQwen2VLModel") == "Qwen2VLModel"
    assert canonical_class_name("FullyShardedDataParallel") == "FullyShardedDataParallel"
