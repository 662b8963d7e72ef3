"""The synthetic batches a probe runs: what each class's processor makes for one input, at its real layout.

A model is probed for every mix its forward takes (:func:`accepted_mixes`); where mmfreeze has no
batch for a class, that mix's probe says so. A batch only has to take the same code path as a real one (the placeholder tokens where the
model scatters its tower's output, the grid a windowed ViT reads); its values do not matter, since
only the graph is read. Every builder takes the model's config and class and returns the forward's
keyword arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn
    from transformers import PretrainedConfig

TEXT = "text"
TEXT_IMAGE = "text+image"
TEXT_TOKENS = 16

Batch = Callable[["PretrainedConfig", "type[nn.Module]"], "dict[str, torch.Tensor]"]


def text_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """A few text tokens: every model's text path."""
    import torch

    return {"input_ids": torch.ones((1, TEXT_TOKENS), dtype=torch.long)}


def _with_placeholders(tokens: int, token_id: int, first: int = 1) -> torch.Tensor:
    """``input_ids`` of ``tokens`` placeholders from position ``first``, then text."""
    import torch

    input_ids = torch.ones((1, tokens + TEXT_TOKENS), dtype=torch.long)
    input_ids[0, first:first + tokens] = token_id
    return input_ids


def _square_image(config: PretrainedConfig, side: int | None = None, leading: tuple[int, ...] = (1,)) -> torch.Tensor:
    """One image ``side`` pixels a side (the tower's ``image_size`` by default) behind ``leading``
    dimensions. Its pixels are ones: Idefics drops an all-zero image as padding."""
    import torch

    vision = config.vision_config
    side = side or vision.image_size
    return torch.ones((*leading, vision.num_channels, side, side))


def llava_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image at the tower's resolution, its placeholder tokens in the text: what LLaVA's
    processor makes (``image_size / patch_size`` squared tokens, plus the CLS one under ``full``)."""
    vision = config.vision_config
    tokens = (vision.image_size // vision.patch_size) ** 2 + (config.vision_feature_select_strategy == "full")
    return {"input_ids": _with_placeholders(tokens, config.image_token_index), "pixel_values": _square_image(config)}


def paligemma_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """PaliGemma's prefix: the image's ``(image_size / patch_size)`` squared tokens first, then the
    text; ``token_type_ids`` 0 marks the prefix, which attends bidirectionally."""
    import torch

    vision = config.vision_config
    input_ids = _with_placeholders((vision.image_size // vision.patch_size) ** 2, config.image_token_index, first=0)
    return {"input_ids": input_ids, "pixel_values": _square_image(config), "token_type_ids": torch.zeros_like(input_ids)}


def pixtral_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """Mistral-3's Pixtral tower takes any size a multiple of its patch: a 4 x 4-patch image, merged
    ``spatial_merge_size`` squared into tokens, with its size given (``image_sizes``)."""
    import torch

    vision = config.vision_config
    side = 4 * vision.patch_size
    tokens = (4 // config.spatial_merge_size) ** 2
    return {"input_ids": _with_placeholders(tokens, config.image_token_index),
            "pixel_values": _square_image(config, side), "image_sizes": torch.tensor([[side, side]])}


def aya_vision_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One tile at the tower's resolution, its patches pixel-shuffled by ``downsample_factor`` a side."""
    vision = config.vision_config
    tokens = (vision.image_size // vision.patch_size // config.downsample_factor) ** 2
    return {"input_ids": _with_placeholders(tokens, config.image_token_index), "pixel_values": _square_image(config)}


def internvl_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One 448 x 448 tile, ``image_seq_length`` tokens after InternVL's pixel shuffle."""
    import torch

    vision = config.vision_config
    return {"input_ids": _with_placeholders(config.image_seq_length, config.image_token_id),
            "pixel_values": torch.ones((1, vision.num_channels, *vision.image_size))}


def idefics2_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One 4 x 4-patch image (Idefics2 takes any size up to ``image_size``), resampled by the
    perceiver into ``resampler_n_latents`` tokens."""
    vision = config.vision_config
    return {"input_ids": _with_placeholders(config.perceiver_config.resampler_n_latents, config.image_token_id),
            "pixel_values": _square_image(config, 4 * vision.patch_size, leading=(1, 1))}


def idefics3_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image at the tower's resolution (Idefics3, SmolVLM), its patches pixel-shuffled by
    ``scale_factor`` a side into tokens."""
    vision = config.vision_config
    tokens = (vision.image_size // vision.patch_size // config.scale_factor) ** 2
    return {"input_ids": _with_placeholders(tokens, config.image_token_id),
            "pixel_values": _square_image(config, leading=(1, 1))}


def _grid_batch(config: PretrainedConfig, model_class: type[nn.Module], video: bool) -> dict[str, torch.Tensor]:
    """One 56 x 56 image (or a two-frame clip of it) as the Qwen-VL family's processors make it: a
    1 x 4 x 4 grid of patches (a temporal patch holds two frames), flattened (channels x temporal
    patch x patch x patch), merged 2 x 2 into 4 placeholder tokens between start and end tokens."""
    import torch

    vision = config.vision_config
    kind = "video" if video else "image"
    grid = (1, 4, 4)
    patches = grid[0] * grid[1] * grid[2]
    tokens = patches // vision.spatial_merge_size ** 2
    placeholder, start, end = _grid_tokens(config, kind)
    input_ids = _with_placeholders(tokens, placeholder, first=2)
    input_ids[0, 1], input_ids[0, 2 + tokens] = start, end
    width = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
    batch = {"input_ids": input_ids, "pixel_values_videos" if video else "pixel_values": torch.zeros((patches, width)),
             f"{kind}_grid_thw": torch.tensor([grid])}
    # transformers 5.24's processors also mark each token's modality (text 0, image 1, video 2) for
    # M-RoPE; 5.18 finds the placeholder tokens itself and takes no such argument.
    if "mm_token_type_ids" in inspect.signature(model_class.forward).parameters:
        batch["mm_token_type_ids"] = (input_ids == placeholder).int() * (2 if video else 1)
    return batch


def _grid_tokens(config: PretrainedConfig, kind: str) -> tuple[int, int, int]:
    """(placeholder, start, end) token ids: Qwen has one vision start and end token and a
    placeholder per kind; GLM-4.1V/4.5V a start and end per kind and the image placeholder in
    videos too (each frame is an image)."""
    if hasattr(config, "vision_start_token_id"):
        return getattr(config, f"{kind}_token_id"), config.vision_start_token_id, config.vision_end_token_id
    return config.image_token_id, getattr(config, f"{kind}_start_token_id"), getattr(config, f"{kind}_end_token_id")


def grid_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """:func:`_grid_batch` with an image."""
    return _grid_batch(config, model_class, video=False)


def grid_video_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """:func:`_grid_batch` with a two-frame video."""
    return _grid_batch(config, model_class, video=True)


def gemma3_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image at the tower's resolution, pooled into ``mm_tokens_per_image`` placeholder tokens,
    which ``token_type_ids`` marks (Gemma-3 attends bidirectionally within an image)."""
    input_ids = _with_placeholders(config.mm_tokens_per_image, config.image_token_id)
    return {"input_ids": input_ids, "token_type_ids": (input_ids == config.image_token_id).long(),
            "pixel_values": _square_image(config)}


def whisper_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One clip as Qwen2-Audio's and Qwen2.5-Omni's Whisper feature extractor makes it:
    ``2 * max_source_positions`` mel frames (Qwen2-Audio's encoder takes no other length), which
    their two convolutions and pooling turn into a quarter as many tokens. The Omni model's audio
    settings are its thinker's, the module its loss comes from."""
    import torch

    config = getattr(config, "thinker_config", config)
    audio = config.audio_config
    frames = 2 * audio.max_source_positions
    return {"input_ids": _with_placeholders((frames // 2 - 2) // 2 + 1, config.audio_token_index),
            "input_features": torch.ones((1, audio.num_mel_bins, frames)),
            "feature_attention_mask": torch.ones((1, frames), dtype=torch.long)}


def voxtral_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One Whisper-length clip; Voxtral's projector stacks 4 encoder frames a token."""
    import torch

    audio = config.audio_config
    frames = 2 * audio.max_source_positions
    return {"input_ids": _with_placeholders(audio.max_source_positions // 2, config.audio_token_id),
            "input_features": torch.ones((1, audio.num_mel_bins, frames))}


def granite_speech_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """Two ``window_size`` windows of stacked log-mel frames; the Q-Former projector turns each
    window into ``window_size / downsample_rate`` tokens, which ``input_features_mask`` marks."""
    import torch

    frames = 2 * config.window_size
    tokens = 2 * (config.window_size // config.downsample_rate)
    return {"input_ids": _with_placeholders(tokens, config.audio_token_index),
            "input_features": torch.ones((1, frames, config.encoder_config.input_dim)),
            "input_features_mask": torch.ones((1, tokens), dtype=torch.bool)}


GRID_CLASSES = ("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
                "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
                "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration")
"""Classes whose vision input is a flat patch list with a ``(t, h, w)`` grid (:func:`_grid_batch`)."""
IMAGE_BATCHES: Mapping[str, Batch] = MappingProxyType({
    "LlavaForConditionalGeneration": llava_image_batch,
    "Gemma3ForConditionalGeneration": gemma3_image_batch,
    "PaliGemmaForConditionalGeneration": paligemma_image_batch,
    "Mistral3ForConditionalGeneration": pixtral_image_batch,
    "AyaVisionForConditionalGeneration": aya_vision_image_batch,
    "InternVLForConditionalGeneration": internvl_image_batch,
    "Idefics2ForConditionalGeneration": idefics2_image_batch,
    "Idefics3ForConditionalGeneration": idefics3_image_batch,
    "SmolVLMForConditionalGeneration": idefics3_image_batch,
    **dict.fromkeys(GRID_CLASSES, grid_image_batch),
})
"""Classes whose image batch is known, and the batch their processor makes."""
VIDEO_BATCHES: Mapping[str, Batch] = MappingProxyType(dict.fromkeys(GRID_CLASSES, grid_video_batch))
"""Classes whose video batch is known."""

AUDIO_BATCHES: Mapping[str, Batch] = MappingProxyType({
    "Qwen2AudioForConditionalGeneration": whisper_audio_batch,
    "Qwen2_5OmniForConditionalGeneration": whisper_audio_batch,
    "VoxtralForConditionalGeneration": voxtral_audio_batch,
    "GraniteSpeechForConditionalGeneration": granite_speech_audio_batch,
})
"""Classes whose audio batch is known."""

BATCHES: Mapping[str, Mapping[str, Batch]] = MappingProxyType({
    TEXT_IMAGE: IMAGE_BATCHES,
    "text+video": VIDEO_BATCHES,
    "text+audio": AUDIO_BATCHES,
})
"""Per mix beside text, the classes mmfreeze has a batch for."""
INPUT_ARGUMENTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    TEXT_IMAGE: ("pixel_values", "image_pixel_values"),
    "text+video": ("pixel_values_videos",),
    "text+audio": ("input_features", "input_values", "audio_values", "input_audio_embeds", "audio_input_features"),
})
"""The forward arguments that carry each mix's input: a class whose forward takes one can be fed that mix."""


def accepted_mixes(module: nn.Module) -> tuple[str, ...]:
    """The mixes ``module``'s forward can be fed: text, and each input one of its arguments carries."""
    arguments = _forward_arguments(module)
    return (TEXT, *(mix for mix, names in INPUT_ARGUMENTS.items() if any(name in arguments for name in names)))


def _forward_arguments(module: nn.Module) -> frozenset[str]:
    """The argument names of ``module.forward``; where it passes ``**kwargs`` on to the base model it
    wraps (``module.model``, as the framework's Qwen3-VL-MoE passes ``pixel_values``), that one's too."""
    parameters = inspect.signature(module.forward).parameters
    names = frozenset(parameters)
    inner = getattr(module, "model", None)
    if inner is not None and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return names | _forward_arguments(inner)
    return names


def batch_for(mix: str, model_class: type[nn.Module]) -> Batch | None:
    """``model_class``'s batch for ``mix``, or ``None`` when mmfreeze has none."""
    return text_batch if mix == TEXT else BATCHES[mix].get(model_class.__name__)
