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


def llava_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image at the tower's resolution, its placeholder tokens in the text: what LLaVA's
    processor makes (``image_size / patch_size`` squared tokens, plus the CLS one under ``full``)."""
    import torch

    vision = config.vision_config
    tokens = (vision.image_size // vision.patch_size) ** 2 + (config.vision_feature_select_strategy == "full")
    input_ids = torch.ones((1, tokens + TEXT_TOKENS), dtype=torch.long)
    input_ids[0, 1:1 + tokens] = config.image_token_index
    return {"input_ids": input_ids, "pixel_values": torch.zeros((1, vision.num_channels, vision.image_size,
                                                                 vision.image_size))}


def qwen_vl_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One 56 x 56 image as Qwen2-VL's processor makes it: a 4 x 4 grid of patches, flattened
    (channels x temporal patch x patch x patch), merged 2 x 2 into 4 placeholder tokens after a
    vision-start token."""
    import torch

    vision = config.vision_config
    grid = (1, 4, 4)
    patches = grid[0] * grid[1] * grid[2]
    tokens = patches // vision.spatial_merge_size ** 2
    input_ids = torch.ones((1, tokens + 1 + TEXT_TOKENS), dtype=torch.long)
    input_ids[0, 1] = config.vision_start_token_id
    input_ids[0, 2:2 + tokens] = config.image_token_id
    width = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
    batch = {"input_ids": input_ids, "pixel_values": torch.zeros((patches, width)), "image_grid_thw": torch.tensor([grid])}
    # transformers 5.24's processor also marks each token's modality (text 0, image 1) for M-RoPE;
    # 5.18 finds the image tokens itself and takes no such argument.
    if "mm_token_type_ids" in inspect.signature(model_class.forward).parameters:
        batch["mm_token_type_ids"] = (input_ids == config.image_token_id).int()
    return batch


def gemma3_image_batch(config: PretrainedConfig, model_class: type[nn.Module]) -> dict[str, torch.Tensor]:
    """One image at the tower's resolution, pooled into ``mm_tokens_per_image`` placeholder tokens,
    which ``token_type_ids`` marks (Gemma-3 attends bidirectionally within an image)."""
    import torch

    vision = config.vision_config
    tokens = config.mm_tokens_per_image
    input_ids = torch.ones((1, tokens + TEXT_TOKENS), dtype=torch.long)
    input_ids[0, 1:1 + tokens] = config.image_token_id
    return {"input_ids": input_ids, "token_type_ids": (input_ids == config.image_token_id).long(),
            "pixel_values": torch.zeros((1, vision.num_channels, vision.image_size, vision.image_size))}


IMAGE_BATCHES: Mapping[str, Batch] = MappingProxyType({
    "LlavaForConditionalGeneration": llava_image_batch,
    "Qwen2VLForConditionalGeneration": qwen_vl_image_batch,
    "Qwen2_5_VLForConditionalGeneration": qwen_vl_image_batch,
    "Gemma3ForConditionalGeneration": gemma3_image_batch,
})
"""Classes whose image batch is known, and the batch their processor makes."""

BATCHES: Mapping[str, Mapping[str, Batch]] = MappingProxyType({
    TEXT_IMAGE: IMAGE_BATCHES,
    "text+video": {},
    "text+audio": {},
})
"""Per mix beside text, the classes mmfreeze has a batch for."""
INPUT_ARGUMENTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    TEXT_IMAGE: ("pixel_values",),
    "text+video": ("pixel_values_videos",),
    "text+audio": ("input_features", "input_values", "audio_values", "input_audio_embeds"),
})
"""The forward arguments that carry each mix's input: a class whose forward takes one can be fed that mix."""


def accepted_mixes(forward: Callable[..., object]) -> tuple[str, ...]:
    """The mixes a forward can be fed: text, and each input one of its arguments carries."""
    arguments = inspect.signature(forward).parameters
    return (TEXT, *(mix for mix, names in INPUT_ARGUMENTS.items() if any(name in arguments for name in names)))


def batch_for(mix: str, model_class: type[nn.Module]) -> Batch | None:
    """``model_class``'s batch for ``mix``, or ``None`` when mmfreeze has none."""
    return text_batch if mix == TEXT else BATCHES[mix].get(model_class.__name__)
