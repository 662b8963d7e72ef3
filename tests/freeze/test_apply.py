"""The new engine on a live (real-weight, tiny) Qwen2-VL: ownership, no implicit freezing, never unfreezing."""

from __future__ import annotations

import pytest
from torch import nn

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze import FreezeConfig, apply_freeze_config


def tiny_qwen2_vl() -> nn.Module:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    config = Qwen2VLConfig(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "vocab_size": 64, "tie_word_embeddings": False,
                     "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}},
        vision_config={"depth": 2, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2},
    )
    return Qwen2VLForConditionalGeneration(config)


def trainable(model: nn.Module, prefix: str) -> set[bool]:
    return {p.requires_grad for n, p in model.named_parameters() if n.startswith(prefix)}


def test_tower_and_projector_are_disjoint_so_the_merger_stays_trainable() -> None:
    model = tiny_qwen2_vl()
    result = apply_freeze_config(model, {"vision": {"tower": True, "projector": False}})
    assert trainable(model, "model.visual.blocks") == {False}
    assert trainable(model, "model.visual.merger") == {True}
    assert set(result.plan.rules_by_parameter.values()) == {("vision.tower",)}


def test_language_model_true_freezes_decoder_embeddings_norm_and_untied_lm_head() -> None:
    model = tiny_qwen2_vl()
    apply_freeze_config(model, FreezeConfig(language_model=True))
    for prefix in ("model.language_model.layers", "model.language_model.embed_tokens", "model.language_model.norm", "lm_head"):
        assert trainable(model, prefix) == {False}, prefix
    assert trainable(model, "model.visual") == {True}


def test_what_is_not_written_is_not_frozen() -> None:
    model = tiny_qwen2_vl()
    assert apply_freeze_config(model, {}).plan.frozen == frozenset()
    assert all(p.requires_grad for p in model.parameters())


def test_false_means_do_not_freeze_not_unfreeze() -> None:
    model = tiny_qwen2_vl()
    model.model.visual.merger.requires_grad_(False)
    result = apply_freeze_config(model, {"vision": {"projector": False}})
    assert trainable(model, "model.visual.merger") == {False}
    merger = next(g for g in result.groups if g.group == "vision.projector")
    assert merger.state == "frozen" and merger.frozen_tensors == merger.tensors


def test_modules_entry_freezes_a_path_prefix_on_a_dot_boundary() -> None:
    model = tiny_qwen2_vl()
    apply_freeze_config(model, {"modules": ["model.language_model.embed_tokens"]})
    assert trainable(model, "model.language_model.embed_tokens") == {False}
    assert trainable(model, "model.language_model.layers") == {True}


def test_result_reports_counts_per_resolved_module_and_language_model() -> None:
    result = apply_freeze_config(tiny_qwen2_vl(), {"vision": {"tower": True, "projector": True}})
    by_group = {g.group: g for g in result.groups}
    assert by_group["vision.tower"].state == by_group["vision.projector"].state == "frozen"
    assert by_group["language_model"].frozen_tensors == 0 and by_group["language_model"].numel > 0


def test_a_role_the_model_lacks_is_rejected_before_anything_is_frozen() -> None:
    model = tiny_qwen2_vl()
    with pytest.raises(FreezeConfigError, match="no role 'resampler'"):
        apply_freeze_config(model, {"vision": {"tower": True, "resampler": True}})
    assert all(p.requires_grad for p in model.parameters())
