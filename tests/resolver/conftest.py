"""Tiny real transformers models (real weights on CPU) for resolver tests."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every resolver test is marked ``resolver``: `.ci/framework_env` runs them (``-m "framework or
    resolver"``) against that release's module trees, in its one test session."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.resolver)


def tiny_qwen2_vl():
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    config = Qwen2VLConfig(
        text_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "vocab_size": 128,
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
        },
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2},
    )
    return Qwen2VLForConditionalGeneration(config)


def tiny_llava():
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32, patch_size=8
        ),
        text_config=LlamaConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, vocab_size=128
        ),
    )
    return LlavaForConditionalGeneration(config)


@pytest.fixture
def qwen2_vl():
    return tiny_qwen2_vl()


@pytest.fixture
def llava():
    return tiny_llava()
