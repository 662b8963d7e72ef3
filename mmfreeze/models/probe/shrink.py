"""A model config shrunk to tiny widths with every depth kept, so its parameter names are the full model's.

Real tensors of a 7B model do not fit a CPU test; the same module tree at width 64 does, and a real
forward and backward on it says, by each parameter's ``.grad``, what the loss reaches. Only widths
change (hidden sizes, heads, head dimensions, expert widths), never a layer, expert or vocabulary
count, so the names are exactly the full model's. Where an image's size sets only a position
table's length and the work per forward, it is made smaller too (Gemma-3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PretrainedConfig

HIDDEN = 64
HEADS = 4
HEAD_DIM = HIDDEN // HEADS
WIDTHS: Mapping[str, int] = {
    "hidden_size": HIDDEN, "embed_dim": HIDDEN, "d_model": HIDDEN, "out_hidden_size": HIDDEN,
    "intermediate_size": 2 * HIDDEN, "moe_intermediate_size": HIDDEN // 2,
    "shared_expert_intermediate_size": HIDDEN // 2, "encoder_ffn_dim": 2 * HIDDEN,
    "num_attention_heads": HEADS, "num_heads": HEADS, "encoder_attention_heads": HEADS,
    "head_dim": HEAD_DIM, "projection_dim": HIDDEN, "output_dim": HIDDEN,
}
"""Width keys and their tiny values, wherever they appear in the config and its sub-configs."""
MROPE_TEXT_TYPES = frozenset({"qwen2_vl_text", "qwen2_5_vl_text", "qwen2_5_omni_text", "qwen2_5_omni_talker"})
"""Text configs whose rotary embedding splits the head dimension in (temporal, height, width)
sections, with a full-size default in the modeling code when the config has none."""
MROPE_SECTION = [2, 3, 3]
"""The sections for :data:`HEAD_DIM`: half of it, in the full default's proportions (16, 24, 24)."""


POOLED_TOKENS_PER_SIDE = 4
"""Gemma-3 pools its tower's patch grid into ``mm_tokens_per_image`` tokens; the shrunken image is
this many tokens a side, one pooling window of the full model's each (a 224-pixel image at patch 14
instead of 896: 256 patches through the tower instead of 4,096, the same parameters)."""


def shrunken(config: PretrainedConfig) -> PretrainedConfig:
    """``config`` with tiny widths in it and every sub-config, its depths and counts unchanged."""
    shrunk = _shrunk(config.to_dict())
    if "mm_tokens_per_image" in shrunk:
        _smaller_pooled_image(shrunk)
    return type(config).from_dict(shrunk)


def _smaller_pooled_image(config: dict[str, Any]) -> None:
    vision = config["vision_config"]
    per_side = vision["image_size"] // vision["patch_size"]
    window = per_side // int(config["mm_tokens_per_image"] ** 0.5)
    config["mm_tokens_per_image"] = POOLED_TOKENS_PER_SIDE ** 2
    vision["image_size"] = vision["patch_size"] * window * POOLED_TOKENS_PER_SIDE


def _shrunk(config: Mapping[str, Any]) -> dict[str, Any]:
    shrunk: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            shrunk[key] = _shrunk(value)
        elif key in WIDTHS and isinstance(value, int) and not isinstance(value, bool):
            shrunk[key] = WIDTHS[key]
        elif key == "num_key_value_heads" and isinstance(value, int):
            shrunk[key] = HEADS if value >= config.get("num_attention_heads", value) else HEADS // 2
        else:
            shrunk[key] = value
    if shrunk.get("model_type") in MROPE_TEXT_TYPES:
        shrunk["rope_parameters"] = {**(shrunk.get("rope_parameters") or {}), "mrope_section": MROPE_SECTION}
    return shrunk
