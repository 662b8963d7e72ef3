"""The synthetic batches a probe runs: what each class's processor makes for one input, at its real layout.

A model can be probed for every mix its forward takes (:func:`accepted_mixes`); where mmfreeze has no
batch for a class, that mix's probe says so. A batch only has to take the same code path as a real one (the placeholder tokens where the
model scatters its tower's output, the grid a windowed ViT reads); its values do not matter, since
only the graph is read. Every builder takes the model's config and class and returns the forward's
keyword arguments.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from functools import partial
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


def _bracketed(tokens: int, token_id: int, start: int, end: int, first: int = 2) -> torch.Tensor:
    """:func:`_with_placeholders` from position ``first``, with the ``start`` token at position 1
    and the ``end`` token right after the placeholders: how processors mark an image or a clip."""
    input_ids = _with_placeholders(tokens, token_id, first=first)
    input_ids[0, 1], input_ids[0, first + tokens] = start, end
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


QWEN_VISION_BOS, QWEN_VISION_EOS = 151652, 151653
"""``<|vision_bos|>`` and ``<|vision_eos|>`` of the Qwen2.5-Omni and Qwen3-Omni tokenizers (the
Qwen2-VL ``vision_start``/``vision_end`` ids). The 5.24 thinker configs define no such field (the
processors take them from the tokenizer); their values do not matter to the graph, only that they
are not placeholders."""


def _grid_batch(config: PretrainedConfig, model_class: type[nn.Module], video: bool) -> dict[str, torch.Tensor]:
    """One 56 x 56 image (or a two-frame clip of it) as the Qwen-VL family's processors make it: a
    1 x 4 x 4 grid of patches (a temporal patch holds two frames), flattened (channels x temporal
    patch x patch x patch), merged 2 x 2 into 4 placeholder tokens between start and end tokens.
    The Omni models' thinker (the module their loss comes from) takes the same layout
    (``Qwen2_5OmniProcessor.replace_image_token``, the same in ``Qwen3OmniMoeProcessor``), and a
    video's ``video_second_per_grid`` (``_process_videos``: temporal patch / fps, 2 by default)."""
    import torch

    omni = hasattr(config, "thinker_config")
    config = getattr(config, "thinker_config", config)
    vision = config.vision_config
    kind = "video" if video else "image"
    grid = (1, 4, 4)
    patches = grid[0] * grid[1] * grid[2]
    tokens = patches // vision.spatial_merge_size ** 2
    placeholder, start, end = _grid_tokens(config, kind)
    input_ids = _bracketed(tokens, placeholder, start, end)
    width = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
    batch = {"input_ids": input_ids, "pixel_values_videos" if video else "pixel_values": torch.zeros((patches, width)),
             f"{kind}_grid_thw": torch.tensor([grid])}
    # transformers 5.24's processors also mark each token's modality (text 0, image 1, video 2) for
    # M-RoPE; 5.18 finds the placeholder tokens itself and takes no such argument.
    if "mm_token_type_ids" in inspect.signature(model_class.forward).parameters:
        batch["mm_token_type_ids"] = (input_ids == placeholder).int() * (2 if video else 1)
    if omni and video:
        batch["video_second_per_grid"] = torch.tensor([vision.temporal_patch_size / 2.0])
    return batch


def _grid_tokens(config: PretrainedConfig, kind: str) -> tuple[int, int, int]:
    """(placeholder, start, end) token ids: Qwen has one vision start and end token and a
    placeholder per kind; GLM-4.1V/4.5V a start and end per kind and the image placeholder in
    videos too (each frame is an image). The Omni thinkers' configs in 5.24 name neither (their
    processors take Qwen's from the tokenizer: :data:`QWEN_VISION_BOS`, :data:`QWEN_VISION_EOS`)."""
    if hasattr(config, "vision_start_token_id") or not hasattr(config, "image_start_token_id"):
        return (getattr(config, f"{kind}_token_id"), getattr(config, "vision_start_token_id", QWEN_VISION_BOS),
                getattr(config, "vision_end_token_id", QWEN_VISION_EOS))
    return config.image_token_id, getattr(config, f"{kind}_start_token_id"), getattr(config, f"{kind}_end_token_id")


grid_image_batch: Batch = partial(_grid_batch, video=False)
grid_video_batch: Batch = partial(_grid_batch, video=True)


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


def _smallest_pinpoint(config: PretrainedConfig) -> tuple[int, int]:
    """The smallest (by area) of ``image_grid_pinpoints``, as (height, width): an image of exactly
    this size is its own best resolution (``select_best_resolution``: every other pinpoint either
    holds fewer of its pixels or wastes more), so it is tiled as few times as any image can be."""
    height, width = min(config.image_grid_pinpoints, key=lambda point: point[0] * point[1])
    return height, width


def _anyres_features(config: PretrainedConfig, height: int, width: int, max_num_patches: int | None = None) -> int:
    """The processor's ``_get_number_of_features`` (LLaVA-NeXT's and LLaVA-OneVision's
    ``processing_*.py``, with ``_get_unpadded_features``) for an image of ``height`` x ``width``
    pixels laid out on its own best pinpoint: the base tile's patches, the tiles' patches left after
    unpadding and a newline per row of them; OneVision (``max_num_patches``, from
    ``anyres_max_N``) interpolates the tiles' patches down when there are more than ~N tiles of them.
    The base tile's count is the bare patch grid here; the CLS token is the caller's."""
    vision = config.vision_config
    side = vision.image_size // vision.patch_size
    rows, columns = height // vision.image_size, width // vision.image_size  # the pinpoint in tiles
    current_height, current_width = side * rows, side * columns
    if width / height > current_width / current_height:
        current_height -= (current_height - int(round(height * (current_width / width), 7))) // 2 * 2
    else:
        current_width -= (current_width - int(round(width * (current_height / height), 7))) // 2 * 2
    unpadded, newlines = current_height * current_width, current_height
    if max_num_patches is not None:
        ratio = math.sqrt(current_height * current_width / (max_num_patches * side ** 2))
        if ratio > 1.1:
            unpadded = int(current_height // ratio) * int(current_width // ratio)
            newlines = int(current_height // ratio)
    return side ** 2 + unpadded + newlines


def _anyres_image(config: PretrainedConfig) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """(pixel_values, image_sizes, height, width) of one image the size of the smallest pinpoint, as
    the anyres image processors lay it out: the whole image resized to one tile first, then the
    pinpoint cut into ``image_size`` tiles (``get_image_patches``; the model's
    ``image_size_to_num_patches`` counts them again from ``image_sizes``)."""
    import torch

    vision = config.vision_config
    height, width = _smallest_pinpoint(config)
    tiles = 1 + (height // vision.image_size) * (width // vision.image_size)
    return _square_image(config, leading=(1, tiles)), torch.tensor([[height, width]]), height, width


def llava_next_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image exactly the size of the smallest ``image_grid_pinpoints`` entry (336 x 672 for
    LLaVA-1.6: a base tile and 1 x 2 tiles of 336 pixels), ``pixel_values`` (1, tiles, channels,
    side, side) and its ``image_sizes``, as ``LlavaNextImageProcessor`` makes it; its placeholder
    count is ``LlavaNextProcessor._get_number_of_features`` (the base tile's patches, the unpadded
    tiles' patches and a newline per row: 576 + 1,152 + 24 at full size), which
    ``pack_image_features`` produces. The processor counts the CLS token
    (``num_additional_image_tokens``) and takes it off again under the ``default`` strategy, so
    it stays only under ``full``."""
    pixel_values, image_sizes, height, width = _anyres_image(config)
    tokens = _anyres_features(config, height, width) + (config.vision_feature_select_strategy == "full")
    return {"input_ids": _with_placeholders(tokens, config.image_token_index),
            "pixel_values": pixel_values, "image_sizes": image_sizes}


def llava_onevision_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image exactly the size of the smallest ``image_grid_pinpoints`` entry (384 x 384 for the
    default pinpoints: a base tile and one tile), as ``LlavaOnevisionImageProcessor`` makes it:
    ``pixel_values`` (1, tiles, channels, side, side), ``image_sizes`` and ``batch_num_images`` (one
    image in the sample, so it is tiled); its placeholder count is
    ``LlavaOnevisionProcessor._get_number_of_features`` (``num_image_tokens`` of the base tile, the
    unpadded tiles' patches and a newline per row, interpolated down past ``anyres_max_9``), less
    one under the ``default`` strategy."""
    import torch

    pixel_values, image_sizes, height, width = _anyres_image(config)
    max_num_patches = int(config.vision_aspect_ratio.strip("anyres_max_"))
    tokens = _anyres_features(config, height, width, max_num_patches) - (config.vision_feature_select_strategy == "default")
    return {"input_ids": _with_placeholders(tokens, config.image_token_index), "pixel_values": pixel_values,
            "image_sizes": image_sizes, "batch_num_images": torch.tensor([1])}


ONEVISION_FRAMES = 2
"""Frames of the OneVision probe clip (``LlavaOnevisionVideoProcessor`` samples none by default)."""


def llava_onevision_video_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """A :data:`ONEVISION_FRAMES`-frame clip at the tower's resolution, ``pixel_values_videos``
    (1, frames, channels, side, side) as ``LlavaOnevisionVideoProcessor`` makes it; each frame's
    patch grid is pooled to half a side, rounded up (``apply_pooling``), and one newline closes the
    clip: ``LlavaOnevisionProcessor.replace_video_token``'s frames x ceil(side / 2) squared + 1."""
    vision = config.vision_config
    pooled = math.ceil(vision.image_size // vision.patch_size / 2)
    tokens = ONEVISION_FRAMES * pooled ** 2 + 1
    return {"input_ids": _with_placeholders(tokens, config.video_token_index),
            "pixel_values_videos": _square_image(config, leading=(1, ONEVISION_FRAMES))}


def mllama_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image of one tile, as ``MllamaProcessor`` makes it: the image fits a 1 x 1 canvas
    (``get_optimal_tiled_canvas``), so ``pixel_values`` is (batch, images, ``max_num_tiles``,
    channels, side, side) with the tiles past the first zero padding (``pad_batches_and_tiles``:
    the tower's embeddings reshape to ``max_num_tiles``, so the padding is always there),
    ``aspect_ratio_ids`` the 1-based index of (1, 1) in ``supported_aspect_ratios``
    (``convert_aspect_ratios_to_ids``), ``aspect_ratio_mask`` 1 for the one tile
    (``build_aspect_ratio_mask``). The text holds one ``<|image|>`` token (no placeholders: the
    image enters by cross-attention); ``cross_attention_mask`` (batch, tokens, images,
    ``max_num_tiles``) lets that token and every one after it see the tile
    (``get_cross_attention_token_mask``, ``convert_sparse_cross_attention_mask_to_dense``)."""
    import torch

    vision = config.vision_config
    tiles = vision.max_num_tiles
    input_ids = _with_placeholders(1, config.image_token_index)
    pixel_values = _square_image(config, leading=(1, 1, tiles))
    pixel_values[:, :, 1:] = 0
    aspect_ratio_mask = torch.zeros((1, 1, tiles), dtype=torch.long)
    aspect_ratio_mask[..., 0] = 1
    cross_attention_mask = torch.zeros((1, input_ids.shape[1], 1, tiles), dtype=torch.long)
    cross_attention_mask[0, 1:, 0, 0] = 1
    aspect_ratio_id = [list(ratio) for ratio in vision.supported_aspect_ratios].index([1, 1]) + 1
    return {"input_ids": input_ids, "pixel_values": pixel_values, "aspect_ratio_ids": torch.tensor([[aspect_ratio_id]]),
            "aspect_ratio_mask": aspect_ratio_mask, "cross_attention_mask": cross_attention_mask}


def llama4_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image of one tile at the tower's resolution, as ``Llama4Processor`` makes it: an image
    that fits a 1 x 1 canvas gets no global tile beside it (``Llama4ImageProcessor._preprocess`` adds
    one only past a single tile), so ``pixel_values`` is (1, channels, side, side); its
    ``(side / patch_size)`` squared patches are pixel-shuffled by ``pixel_shuffle_ratio`` a side
    into ``<|patch|>`` placeholders (``image_token_index``), laid out by ``_prompt_split_image`` as
    ``<|image_start|>``, ``<|image|>`` (an ordinary token to the model), the patches, ``<|image_end|>``."""
    vision = config.vision_config
    tokens = int((vision.image_size // vision.patch_size) ** 2 * vision.pixel_shuffle_ratio ** 2)
    input_ids = _bracketed(tokens, config.image_token_index, config.boi_token_index, config.eoi_token_index, first=3)
    return {"input_ids": input_ids, "pixel_values": _square_image(config)}


def _ernie_batch(config: PretrainedConfig, model_class: type[nn.Module], video: bool) -> dict[str, torch.Tensor]:
    """One 56 x 56 image (or a two-frame clip of it) as Ernie-4.5-VL's processor makes it.

    The image processor (``Ernie4_5_VLMoeImageProcessor.patchify``, ``temporal_patch_size`` 1) gives
    a ``(1, 4, 4)`` grid of flat ``channels x patch x patch`` patches; the video processor one row of
    patches per frame (grid ``(2, 4, 4)``, frames not stacked). The resampler merges 2 x 2 patches,
    and for a video two frames (``temporal_merge_size``), so ``replace_image_token`` /
    ``replace_video_token`` put 4 placeholders between the start and end tokens (an image runs the
    temporal MLP too, its one frame duplicated: ``_temporal_slicing``). ``mm_token_type_ids`` marks
    the placeholders for M-RoPE (``ProcessorMixin.create_mm_token_type_ids``);
    ``moe_mm_token_type_ids`` (``create_moe_mm_token_type_ids``) marks the start and end tokens too,
    and routes all of them to the vision experts.
    """
    import torch

    vision = config.vision_config
    kind = "video" if video else "image"
    grid = (vision.temporal_merge_size if video else 1, 4, 4)
    patches = grid[0] * grid[1] * grid[2]
    tokens = patches // vision.spatial_merge_size ** 2 // (vision.temporal_merge_size if video else 1)
    placeholder = getattr(config, f"{kind}_token_id")
    input_ids = _bracketed(tokens, placeholder, getattr(config, f"{kind}_start_token_id"),
                           getattr(config, f"{kind}_end_token_id"))
    modality = 2 if video else 1
    width = vision.in_channels * vision.patch_size ** 2
    return {"input_ids": input_ids,
            "pixel_values_videos" if video else "pixel_values": torch.ones((patches, width)),
            f"{kind}_grid_thw": torch.tensor([grid]),
            "mm_token_type_ids": (input_ids == placeholder).int() * modality,
            "moe_mm_token_type_ids": torch.zeros_like(input_ids).index_fill_(1, torch.arange(1, 3 + tokens), modality)}


ernie_image_batch: Batch = partial(_ernie_batch, video=False)
ernie_video_batch: Batch = partial(_ernie_batch, video=True)


def _kimi_k25_batch(config: PretrainedConfig, model_class: type[nn.Module], video: bool) -> dict[str, torch.Tensor]:
    """One 56 x 56 image (or a two-frame chunk of it) as Kimi-K2.5's processor makes it.

    ``Kimi_K25ImageProcessor.patchify`` gives ``(h * w, channels, patch, patch)`` patches and the
    grid ``(1, h, w)``; the video processor cuts a clip into chunks of ``temporal_patch_size`` (4)
    frames, one grid row ``(frames, h, w)`` each, its patches frame-major. MoonViT pools each chunk's
    frames (``Kimi_K25VisionModel.temporal_merge``) and merges 2 x 2 patches
    (``merge_kernel_size``), so an image or a chunk is ``h * w / 4`` placeholder tokens
    (``replace_image_token``, ``replace_video_token``), between ``<|media_begin|>``
    (``vision_start_token_id``) and ``<|media_end|>``. No M-RoPE: the text model is DeepSeek-V3
    with 1D positions, and the placeholders (the video one is outside the vocabulary) are embedded
    as token 0 before the scatter (``Kimi_K25Model.forward``).
    """
    import torch

    vision = config.vision_config
    kernel_height, kernel_width = vision.merge_kernel_size
    grid = (2 if video else 1, 2 * kernel_height, 2 * kernel_width)
    tokens = grid[1] * grid[2] // (kernel_height * kernel_width)
    placeholder = config.video_token_id if video else config.image_token_id
    input_ids = _bracketed(tokens, placeholder, config.vision_start_token_id, config.vision_end_token_id)
    kind = "video" if video else "image"
    return {"input_ids": input_ids,
            "pixel_values_videos" if video else "pixel_values":
                torch.ones((grid[0] * grid[1] * grid[2], 3, vision.patch_size, vision.patch_size)),
            f"{kind}_grid_thw": torch.tensor([grid])}


kimi_k25_image_batch: Batch = partial(_kimi_k25_batch, video=False)
kimi_k25_video_batch: Batch = partial(_kimi_k25_batch, video=True)


def muse_glimmer_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One 56 x 56 image as Muse-Glimmer's processor makes it.

    ``MuseGlimmerImageProcessor.patchify`` gives a ``(1, 4, 4)`` grid of flat patches, each the
    frame repeated ``temporal_patch_size`` (2) times and laid out (temporal, channel, patch, patch),
    as wide as the tower's ``patch_embedding`` (``patch_temporal * 3 * patch_size ** 2``). The
    tower pixel-shuffles 2 x 2 patches (``merge_size``) into a token, so ``replace_image_token``
    writes 4 ``<|patch|>`` placeholders between ``<|image_start|>`` and ``<|image_end|>`` (their ids
    are the tokenizer's, not in the config: text tokens here). 4 x 4 patches fit one window of the
    windowed layers (``pos_emb_height`` patches a side). No M-RoPE, no token types.
    """
    import torch

    vision = config.vision_config
    grid = (1, 2 * vision.merge_size, 2 * vision.merge_size)
    tokens = grid[1] * grid[2] // vision.merge_size ** 2
    width = vision.patch_temporal * 3 * vision.patch_size ** 2
    return {"input_ids": _with_placeholders(tokens, config.image_token_id, first=2),
            "pixel_values": torch.ones((grid[0] * grid[1] * grid[2], width)),
            "image_grid_thw": torch.tensor([grid])}


def minimax_m3_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One 56 x 56 image as MiniMax-M3's processor makes it: a ``(1, 4, 4)`` grid of flat patches,
    each the frame repeated ``temporal_patch_size`` (2) times and laid out (channel, temporal,
    patch, patch), as wide as the tower's Conv3d. The projector merges 2 x 2 patches
    (``spatial_merge_size``) into a token, so the text holds 4 ``image_token_index`` placeholders.
    transformers' vision config names both sizes; the framework's (``components/models/minimax_m3_vl``)
    reads them from ``img_token_compression_config``, as the checkpoint's config.json has them.
    """
    import torch

    vision = config.vision_config
    compression = getattr(vision, "img_token_compression_config", None) or {}
    merge = getattr(vision, "spatial_merge_size", None) or compression.get("spatial_merge_size", 2)
    temporal = getattr(vision, "temporal_patch_size", None) or compression.get("temporal_patch_size", 2)
    grid = (1, 2 * merge, 2 * merge)
    patches = grid[0] * grid[1] * grid[2]
    return {"input_ids": _with_placeholders(patches // merge ** 2, config.image_token_index),
            "pixel_values": torch.ones((patches, vision.num_channels * temporal * vision.patch_size ** 2)),
            "image_grid_thw": torch.tensor([grid])}


def qwen3_omni_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One clip of ``2 * n_window`` mel frames (one whole chunk of Qwen3-Omni's audio encoder, 1 s at
    the full model's 100 frames a second) as ``Qwen3OmniMoeProcessor._process_audio`` makes it:
    ``input_features`` with a ``feature_attention_mask`` over its frames, and as many placeholder
    tokens as ``_get_feat_extract_output_lengths`` gives (13 a whole chunk: three stride-2
    convolutions). The settings are the thinker's, the module the loss comes from."""
    import torch
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import _get_feat_extract_output_lengths

    thinker = config.thinker_config
    audio = thinker.audio_config
    frames = 2 * audio.n_window
    tokens = int(_get_feat_extract_output_lengths(torch.tensor(frames), audio.n_window))
    return {"input_ids": _with_placeholders(tokens, thinker.audio_token_id),
            "input_features": torch.ones((1, audio.num_mel_bins, frames)),
            "feature_attention_mask": torch.ones((1, frames), dtype=torch.long)}


def phi4_multimodal_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One ``crop_size`` square image as ``Phi4MultimodalImageProcessor`` makes it: its global view
    and its one HD crop stacked (``image_pixel_values`` 1 x 2 crops x C x H x W), ``image_sizes``
    and an all-ones patch ``image_attention_mask`` per crop. Each crop's patch grid is pooled 2 x 2
    (``Phi4MultimodalImageEmbedding.get_img_features``, a grid padded to even), and each pooled row
    gets a separator column: ``b (b + 1)`` tokens for the global view and as many for the crop,
    plus one between them (545 at 448 pixels, the processor's ``num_img_tokens``)."""
    import torch

    vision = config.vision_config
    side = vision.crop_size
    patches = side // vision.patch_size
    pooled = (patches + patches % 2) // 2
    tokens = 2 * pooled * (pooled + 1) + 1
    return {"input_ids": _with_placeholders(tokens, vision.image_token_id),
            "image_pixel_values": torch.ones((1, 2, vision.num_channels, side, side)),
            "image_sizes": torch.tensor([[side, side]]),
            "image_attention_mask": torch.ones((1, 2, patches, patches), dtype=torch.long)}


PHI4_AUDIO_FRAMES = 80
"""0.8 s of 10 ms log-mel frames: ten tokens after the audio encoder's 8-fold time reduction."""


def phi4_multimodal_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One clip as ``Phi4MultimodalFeatureExtractor`` makes it: ``audio_input_features`` (1 x frames
    x ``input_size`` mel bins; a lone clip gets no ``audio_attention_mask``) and ``audio_embed_sizes``,
    the frames divided by ``time_reduction`` and then by ``downsample_rate``, each rounded up
    (``_compute_audio_embed_size``): that many placeholder tokens. A clip with no image runs the
    ``speech`` projection (``Phi4MultimodalFeatureEmbedding.forward``)."""
    import torch

    audio = config.audio_config
    tokens = -(-PHI4_AUDIO_FRAMES // audio.time_reduction)
    tokens = -(-tokens // audio.downsample_rate)
    return {"input_ids": _with_placeholders(tokens, audio.audio_token_id),
            "audio_input_features": torch.ones((1, PHI4_AUDIO_FRAMES, audio.input_size)),
            "audio_embed_sizes": torch.tensor([tokens])}


GEMMA3N_IMAGE_SIDE = 256
"""``Gemma3nProcessor`` resizes every image to 768 x 768; the MobileNetV5 tower is a convolutional net
with no position table and its fusion adapter brings any input to a 16 x 16 grid, so a 256-pixel
image (whose 16 x 16 top feature map needs neither pooling nor interpolation) reaches the same
parameters for a ninth of the tower's work (verified: the same unreached set as at 768)."""


def gemma3n_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image as ``Gemma3nProcessor`` makes it, at :data:`GEMMA3N_IMAGE_SIDE` pixels a side:
    ``vision_soft_tokens_per_image`` (256) placeholder tokens between ``boi`` and ``eoi`` tokens
    (``full_image_sequence``); the MobileNetV5 tower's multi-scale fusion adapter
    (``MobileNetV5MultiScaleFusionAdapter``) brings its features to a 16 x 16 grid, those 256 tokens."""
    import torch

    tokens = config.vision_soft_tokens_per_image
    input_ids = _bracketed(tokens, config.image_token_id, config.boi_token_id, config.eoi_token_id)
    return {"input_ids": input_ids, "pixel_values": torch.ones((1, 3, GEMMA3N_IMAGE_SIDE, GEMMA3N_IMAGE_SIDE))}


GEMMA3N_AUDIO_FRAMES = 64
"""0.64 s of 10 ms log-mel frames: 16 after the two stride-2 convolutions, 4 tokens after the
conformer's 4-fold reduction (the model pads them out to ``audio_soft_tokens_per_image``)."""


def gemma3n_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One short clip as ``Gemma3nProcessor`` makes it: ``input_features`` (1 x frames x 128 mel
    bins) with ``input_features_mask`` true on its frames (``Gemma3nAudioFeatureExtractor``), and
    always ``audio_soft_tokens_per_image`` (188) placeholder tokens between ``boa`` and ``eoa``
    tokens (``full_audio_sequence``): ``Gemma3nModel.forward`` pads the encoder's few tokens out to
    that many with the audio embedder's last token."""
    import torch

    tokens = config.audio_soft_tokens_per_image
    input_ids = _bracketed(tokens, config.audio_token_id, config.boa_token_id, config.eoa_token_id)
    return {"input_ids": input_ids,
            "input_features": torch.ones((1, GEMMA3N_AUDIO_FRAMES, config.audio_config.input_feat_size)),
            "input_features_mask": torch.ones((1, GEMMA3N_AUDIO_FRAMES), dtype=torch.bool)}


GEMMA4_PATCHES_PER_SIDE = 6
"""A 96 x 96 image at patch 16: 36 patches, pooled 3 x 3 (``pooling_kernel_size``) into 4 soft tokens."""


def _gemma4_patches(config: PretrainedConfig, frames: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``frames`` images of :data:`GEMMA4_PATCHES_PER_SIDE` squared patches each, as
    ``Gemma4ImageProcessor._preprocess`` / ``Gemma4VideoProcessor`` lay them out: flattened patches
    (``convert_image_to_patches``, patch x patch x channels each), their (x, y) positions, then one
    pooling window of padding patches at position (-1, -1) (``pad_along_first_dim``; the processor
    pads to ``max_soft_tokens`` windows, 70 at least, and the tower strips them). Returns the patches,
    the positions and the soft tokens per frame."""
    import torch

    vision = config.vision_config
    side, window = GEMMA4_PATCHES_PER_SIDE, vision.pooling_kernel_size ** 2
    real = side * side
    xs, ys = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="xy")
    positions = torch.full((frames, real + window, 2), -1, dtype=torch.long)
    positions[:, :real] = torch.stack([xs, ys], dim=-1).reshape(real, 2)
    patches = torch.zeros((frames, real + window, 3 * vision.patch_size ** 2))
    patches[:, :real] = 1.0
    return patches, positions, real // window


def _gemma4_placeholders(config: PretrainedConfig, groups: int, tokens: int, token_id: int,
                         kind: int) -> dict[str, torch.Tensor]:
    """``input_ids`` with ``groups`` runs of ``tokens`` placeholders, each between ``boi``/``boa``
    and ``eoi``/``eoa`` (a video frame's run after its timestamp text), and ``mm_token_type_ids``
    marking them ``kind`` (``ProcessorMixin.create_mm_token_type_ids``: image 1, video 2, audio 3)."""
    import torch

    start, end = ((config.boa_token_id, config.eoa_token_index) if kind == 3
                  else (config.boi_token_id, config.eoi_token_id))
    run = [start, *[token_id] * tokens, end]
    ids = [2]
    for _ in range(groups):
        ids += [1, 1, *run]  # "mm:ss " before a video frame; text between runs either way
    input_ids = torch.tensor([ids + [1] * TEXT_TOKENS])
    return {"input_ids": input_ids, "mm_token_type_ids": (input_ids == token_id).long() * kind}


def gemma4_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One small image as ``Gemma4Processor`` makes it (:func:`_gemma4_patches`): ``pixel_values``
    (1 x patches x patch pixels), ``image_position_ids``, and its pooled soft tokens between
    ``boi`` and ``eoi`` (``replace_image_token``), marked in ``mm_token_type_ids``."""
    patches, positions, tokens = _gemma4_patches(config, 1)
    return {**_gemma4_placeholders(config, 1, tokens, config.image_token_id, kind=1),
            "pixel_values": patches, "image_position_ids": positions}


def gemma4_video_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """A two-frame clip as ``Gemma4VideoProcessor`` makes it: each frame patchified like an image
    (:func:`_gemma4_patches`), ``pixel_values_videos`` (frames x patches x patch pixels),
    ``video_position_ids`` and ``num_frames_per_video``; each frame's soft tokens after its timestamp
    between ``boi`` and ``eoi`` (``Gemma4Processor.replace_video_token``). transformers 5.18 takes
    the frames behind a leading video dimension instead, and no frame count."""
    import torch

    patches, positions, tokens = _gemma4_patches(config, 2)
    batch = _gemma4_placeholders(config, 2, tokens, config.video_token_id, kind=2)
    if "num_frames_per_video" not in inspect.signature(model_class.forward).parameters:
        return {**batch, "pixel_values_videos": patches[None], "video_position_ids": positions[None]}
    return {**batch, "pixel_values_videos": patches, "video_position_ids": positions,
            "num_frames_per_video": torch.tensor([2])}


GEMMA4_MEL_BINS = 128
"""``Gemma4AudioFeatureExtractor``'s ``feature_size``; the encoder's subsampling projection is built
for it (``subsampling_conv_channels[0] / 4`` frequency bins after two stride-2 convolutions)."""
GEMMA4_AUDIO_FRAMES = 64
"""0.64 s of 10 ms log-mel frames: 16 tokens after the two stride-2 convolutions."""


def gemma4_audio_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One short clip as ``Gemma4Processor`` makes it: ``input_features`` (1 x frames x 128 mel
    bins) with ``input_features_mask`` true on its frames, and one placeholder per frame left after
    two stride-2 convolutions (``replace_audio_token``: ``(t + 2 - 3) // 2 + 1`` twice) between
    ``boa`` and ``eoa``, marked 3 in ``mm_token_type_ids``."""
    import torch

    tokens = GEMMA4_AUDIO_FRAMES
    for _ in range(2):
        tokens = (tokens + 2 - 3) // 2 + 1
    return {**_gemma4_placeholders(config, 1, tokens, config.audio_token_id, kind=3),
            "input_features": torch.ones((1, GEMMA4_AUDIO_FRAMES, GEMMA4_MEL_BINS)),
            "input_features_mask": torch.ones((1, GEMMA4_AUDIO_FRAMES), dtype=torch.bool)}


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
    "LlavaNextForConditionalGeneration": llava_next_image_batch,
    "LlavaOnevisionForConditionalGeneration": llava_onevision_image_batch,
    "MllamaForConditionalGeneration": mllama_image_batch,
    "Llama4ForConditionalGeneration": llama4_image_batch,
    "Ernie4_5_VLMoeForConditionalGeneration": ernie_image_batch,
    "Kimi_K25ForConditionalGeneration": kimi_k25_image_batch,
    "MuseGlimmerForConditionalGeneration": muse_glimmer_image_batch,
    "MiniMaxM3SparseForConditionalGeneration": minimax_m3_image_batch,
    "Qwen2_5OmniForConditionalGeneration": grid_image_batch,
    "Qwen3OmniMoeForConditionalGeneration": grid_image_batch,
    "Phi4MultimodalForCausalLM": phi4_multimodal_image_batch,
    "Gemma3nForConditionalGeneration": gemma3n_image_batch,
    "Gemma4ForConditionalGeneration": gemma4_image_batch,
    **dict.fromkeys(GRID_CLASSES, grid_image_batch),
})
"""Classes whose image batch is known, and the batch their processor makes."""
VIDEO_BATCHES: Mapping[str, Batch] = MappingProxyType({
    **dict.fromkeys(GRID_CLASSES, grid_video_batch),
    "LlavaOnevisionForConditionalGeneration": llava_onevision_video_batch,
    "Ernie4_5_VLMoeForConditionalGeneration": ernie_video_batch,
    "Kimi_K25ForConditionalGeneration": kimi_k25_video_batch,
    "Qwen2_5OmniForConditionalGeneration": grid_video_batch,
    "Qwen3OmniMoeForConditionalGeneration": grid_video_batch,
    "Gemma4ForConditionalGeneration": gemma4_video_batch,
})
"""Classes whose video batch is known."""

AUDIO_BATCHES: Mapping[str, Batch] = MappingProxyType({
    "Qwen2AudioForConditionalGeneration": whisper_audio_batch,
    "Qwen2_5OmniForConditionalGeneration": whisper_audio_batch,
    "VoxtralForConditionalGeneration": voxtral_audio_batch,
    "GraniteSpeechForConditionalGeneration": granite_speech_audio_batch,
    "Qwen3OmniMoeForConditionalGeneration": qwen3_omni_audio_batch,
    "Phi4MultimodalForCausalLM": phi4_multimodal_audio_batch,
    "Gemma3nForConditionalGeneration": gemma3n_audio_batch,
    "Gemma4ForConditionalGeneration": gemma4_audio_batch,
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
