"""The legacy engine's load-bearing accidents, pinned on real transformers classes built on meta."""

from __future__ import annotations

from functools import cache

import pytest
import torch

from mmfreeze.freeze.apply import apply_legacy_freeze_config
from mmfreeze.freeze.legacy import plan_legacy_freeze
from mmfreeze.freeze.plan import parameters_under_any
from mmfreeze.models.build import build_meta_model, resolve_model_class
from mmfreeze.models.structure import ModelStructure, structure_of

VISION_ONLY = {"freeze_vision_tower": True}
LANGUAGE_ONLY = {"freeze_vision_tower": False, "freeze_language_model": True}


def default_model(model_type: str) -> torch.nn.Module:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config = CONFIG_MAPPING[model_type]()
    return build_meta_model(config, resolve_model_class(config, "AutoModelForImageTextToText"))


@cache
def default_structure(model_type: str) -> ModelStructure:
    return structure_of(default_model(model_type))


def frozen_under(model_type: str, config: dict, prefix: str) -> bool:
    """Whether every parameter under ``prefix`` is frozen (and there is at least one)."""
    structure = default_structure(model_type)
    names = set(parameters_under_any(structure, [prefix]))
    assert names, f"{model_type} has no parameters under {prefix}"
    return names <= plan_legacy_freeze(structure, config).frozen


def test_vision_flag_freezes_gemma3n_embed_vision_projector() -> None:
    assert frozen_under("gemma3n", VISION_ONLY, "model.embed_vision")


def test_vision_flag_freezes_qwen2_vl_visual_merger_projector() -> None:
    assert frozen_under("qwen2_vl", VISION_ONLY, "model.visual.merger")


@pytest.mark.parametrize("model_type", ["llava", "gemma3", "mistral3"])
def test_vision_flag_never_freezes_multi_modal_projector(model_type: str) -> None:
    structure = default_structure(model_type)
    projector = set(parameters_under_any(structure, ["model.multi_modal_projector"]))
    assert projector and not projector & plan_legacy_freeze(structure, VISION_ONLY).frozen


def test_language_flag_leaves_untied_lm_head_trainable() -> None:
    assert "lm_head.weight" not in plan_legacy_freeze(default_structure("llava"), LANGUAGE_ONLY).frozen


def test_language_flag_freezes_tied_lm_head_through_the_embedding() -> None:
    structure = default_structure("gemma3")
    tied = structure.parameters_by_name["lm_head.weight"]
    assert tied.name == "model.language_model.embed_tokens.weight"
    assert tied.name in plan_legacy_freeze(structure, LANGUAGE_ONLY).frozen


def test_lora_adapters_inside_a_matched_module_are_frozen() -> None:
    """Training injected LoRA first, then froze: adapters under vision modules froze with them."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    config = Qwen2VLConfig(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "vocab_size": 64, "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}},
        vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2},
    )
    model = get_peft_model(Qwen2VLForConditionalGeneration(config), LoraConfig(r=2, target_modules=["qkv", "q_proj"]))
    plan = apply_legacy_freeze_config(model, VISION_ONLY).plan
    vision_lora = [n for n, _ in model.named_parameters() if "lora_" in n and ".visual." in n]
    text_lora = [p for n, p in model.named_parameters() if "lora_" in n and ".language_model." in n]
    assert vision_lora and set(vision_lora) <= plan.frozen
    assert text_lora and all(p.requires_grad for p in text_lora)
