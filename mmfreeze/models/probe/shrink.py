"""A model config shrunk to tiny widths with every depth kept, so its parameter names are the full model's.

Real tensors of a 7B model do not fit a CPU test; the same module tree at width 64 does, and a real
forward on it, its graph walked from the loss, says what the loss reaches (what a backward's
``.grad`` would: tests compare the two name by name). Only widths change (hidden sizes, heads,
head dimensions, expert widths), never a layer, expert or vocabulary count, so the names are
exactly the full model's. Where an image's size or an audio clip's length sets only a position
table's length and the work per forward, it is made smaller too (Gemma-3, the SigLIP, Idefics,
Mllama and Llama-4 towers, anyres tiles, the Whisper-style audio encoders).
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
    "vision_output_dim": HIDDEN, "projector_input_dim": HIDDEN, "projector_output_dim": HIDDEN,
    "hidden_dim": HIDDEN, "dim_head": HEAD_DIM, "encoder_hidden_size": HIDDEN, "hidden_size_per_layer_input": 2,
    "max_source_positions": 100, "projection_hidden_size": HIDDEN,
    "ext_pw_out_channel": HIDDEN, "depthwise_separable_out_channel": HIDDEN,
    "qk_rope_head_dim": HEAD_DIM, "qk_nope_head_dim": HEAD_DIM, "v_head_dim": HEAD_DIM,
    "qk_head_dim": 2 * HEAD_DIM, "q_lora_rank": HIDDEN, "kv_lora_rank": HIDDEN // 2,
    "backbone_hidden_size": HIDDEN,
}
"""Width keys and their tiny values, wherever they appear in the config and its sub-configs; and
one length that sets only a position table: the Whisper-style audio encoders' (200 mel frames a
clip instead of 3,000, still a whole 100-position window of Qwen2.5-Omni's chunked encoder).
DeepSeek-V3's attention widths (Kimi-K2.5's text model) shrink together: its config sets
``head_dim`` from ``qk_rope_head_dim``. A list of widths (Ernie-4.5-VL's text and vision expert
widths) shrinks element by element. The Gemma-3n and Gemma-4 per-layer inputs are 2 wide: their
table has a row per token of a 262k vocabulary and a column per layer and width (at 16 wide, 0.6 GB
to fill for Gemma-4 E2B, measured)."""
MROPE_TEXT_TYPES = frozenset({"qwen2_vl_text", "qwen2_5_vl_text", "qwen2_5_omni_text", "qwen2_5_omni_talker",
                              "glm4v_text", "glm4v_moe_text"})
"""Text configs whose rotary embedding splits its frequencies in (temporal, height, width)
sections, with a full-size default in the modeling code when the config has none."""
MROPE_PROPORTIONS = (2, 3, 3)
"""The sections' proportions in the full defaults (16, 24, 24 of Qwen2-VL; 8, 12, 12 of GLM-4.1V)."""


ERNIE_MROPE_TEXT_TYPES = frozenset({"ernie4_5_vl_moe_text"})
"""Ernie-4.5-VL's sections are (height, width, temporal), height and width equal (their
frequencies interleave pairwise), [22, 22, 20] of 64 in the modeling code's default."""
PIXEL_SHUFFLED_OUTPUTS = frozenset({"muse_glimmer"})
"""Models whose ``out_hidden_size`` is the vision width times ``merge_size`` squared (the adapter
takes the pixel-shuffled tower output), not a free width."""


POOLED_TOKENS_PER_SIDE = 4
"""Gemma-3 pools its tower's patch grid into ``mm_tokens_per_image`` tokens; the shrunken image is
this many tokens a side, one pooling window of the full model's each (a 224-pixel image at patch 14
instead of 896: 256 patches through the tower instead of 4,096, the same parameters)."""


SMALL_IMAGE_TOWERS = frozenset({"siglip_vision_model", "idefics2_vision", "idefics3_vision", "smolvlm_vision",
                                "mllama_vision_model", "llama4_vision_model", "phi4_multimodal_vision"})
"""Vision towers whose ``image_size`` sets only the length of a position table: the shrunken one
sees an image :data:`SMALL_IMAGE_PATCHES` patches a side (PaliGemma-2 at 448 pixels would push
1,024 patches through 27 layers, and as many tokens through the language model; Mllama's four
padded 560-pixel tiles would push 6,432 tokens through each of its 40 tower layers). Any model with
anyres tiling (``image_grid_pinpoints``: LLaVA-NeXT, LLaVA-OneVision) gets the smaller tile too,
its pinpoints the same multiples of it."""
SMALL_IMAGE_PATCHES = 8
"""Divisible by every pixel-shuffle factor of these towers' models (2 for Aya and Idefics3, 4 for SmolVLM)."""


def shrunken(config: PretrainedConfig) -> PretrainedConfig:
    """``config`` with tiny widths in it and every sub-config, its depths and counts unchanged."""
    shrunk = _shrunk(config.to_dict())
    vision = shrunk.get("vision_config") or {}
    if "mm_tokens_per_image" in shrunk:
        _smaller_pooled_image(shrunk)
    elif vision.get("model_type") in SMALL_IMAGE_TOWERS or "image_grid_pinpoints" in shrunk:
        _smaller_tiles(shrunk)
    if shrunk.get("model_type") in PIXEL_SHUFFLED_OUTPUTS:
        # transformers nests vision_config; nemo-automodel's class reads a flat config
        merge = vision.get("merge_size") or shrunk["vision_downsample_factor"]
        shrunk["out_hidden_size"] = HIDDEN * merge ** 2
        if "vision_output_dim" in shrunk:
            shrunk["vision_output_dim"] = shrunk["out_hidden_size"]
    return type(config).from_dict(shrunk)


def _smaller_tiles(config: dict[str, Any]) -> None:
    """The tower's image :data:`SMALL_IMAGE_PATCHES` patches a side; anyres pinpoints, multiples
    of it (a 336 x 672 pinpoint is 1 x 2 tiles), stay the same multiples: the model counts a
    pinpoint's tiles by stepping through it a tile at a time, and unpads by the tile grid."""
    vision = config["vision_config"]
    side = vision["patch_size"] * SMALL_IMAGE_PATCHES
    if config.get("image_grid_pinpoints"):
        tile = vision["image_size"]
        config["image_grid_pinpoints"] = [[height // tile * side, width // tile * side]
                                          for height, width in config["image_grid_pinpoints"]]
    vision["image_size"] = side
    if "crop_size" in vision:  # Phi-4-multimodal cuts an image into crops of the tower's size
        vision["crop_size"] = side


def _smaller_pooled_image(config: dict[str, Any]) -> None:
    vision = config["vision_config"]
    per_side = vision["image_size"] // vision["patch_size"]
    window = per_side // int(config["mm_tokens_per_image"] ** 0.5)
    config["mm_tokens_per_image"] = POOLED_TOKENS_PER_SIDE ** 2
    vision["image_size"] = vision["patch_size"] * window * POOLED_TOKENS_PER_SIDE


TIMM_TOWERS = frozenset({"gemma3n_vision", "timm_wrapper"})
"""Towers built by timm from an ``architecture`` name: their widths are the architecture's, not the
config's (Gemma-3n's MobileNetV5 always puts out 2,048 channels), so their ``hidden_size`` stays;
timm narrows them itself (``channel_multiplier``, passed through ``model_args``): every block,
its parameter names unchanged (MobileNetV5-300M: 294M parameters to 16M)."""
TIMM_CHANNEL_MULTIPLIER = 0.125


def _shrunk(config: Mapping[str, Any]) -> dict[str, Any]:
    shrunk: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value.get("model_type") in TIMM_TOWERS:
            shrunk[key] = {**value, "model_args": {**(value.get("model_args") or {}),
                                                   "channel_multiplier": TIMM_CHANNEL_MULTIPLIER}}
        elif isinstance(value, Mapping):
            shrunk[key] = _shrunk(value)
        elif key in WIDTHS and isinstance(value, int) and not isinstance(value, bool):
            shrunk[key] = WIDTHS[key] if value else 0  # 0 switches a part off (a drafter's per-layer inputs)
        elif key in WIDTHS and isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            shrunk[key] = [WIDTHS[key]] * len(value)
        elif key == "num_key_value_heads" and isinstance(value, int):
            shrunk[key] = HEADS if value >= config.get("num_attention_heads", value) else HEADS // 2
        else:
            shrunk[key] = value
    if "intermediate_layers_indices" in shrunk:  # Mllama's tower hands on its last layer and these, side by side
        shrunk["vision_output_dim"] = HIDDEN * (1 + len(shrunk["intermediate_layers_indices"]))
    if "pixel_shuffle_ratio" in shrunk:  # Llama-4's adapter MLP takes the shuffled patches: width / ratio squared
        shrunk["intermediate_size"] = int(HIDDEN / shrunk["pixel_shuffle_ratio"] ** 2)
    rope = shrunk.get("rope_parameters") or {}
    if shrunk.get("model_type") in ERNIE_MROPE_TEXT_TYPES:
        height_width = HEAD_DIM // 2 * 11 // 32  # the default's proportions, 22 : 22 : 20
        shrunk["rope_parameters"] = {**rope, "mrope_section": [height_width, height_width, HEAD_DIM // 2 - 2 * height_width]}
    elif shrunk.get("model_type") in MROPE_TEXT_TYPES or "mrope_section" in rope:
        shrunk["rope_parameters"] = {**rope, "mrope_section": _mrope_section(rope.get("partial_rotary_factor", 1.0))}
    return shrunk


def _mrope_section(partial_rotary_factor: float) -> list[int]:
    """Sections summing to the shrunken rotary half-dimension (:data:`HEAD_DIM` times the rotary
    fraction, halved), in :data:`MROPE_PROPORTIONS`; the last takes the rounding remainder."""
    total = int(HEAD_DIM * partial_rotary_factor) // 2
    sections = [total * part // sum(MROPE_PROPORTIONS) for part in MROPE_PROPORTIONS[:-1]]
    return [*sections, total - sum(sections)]
