"""One forward per data mix, without weights, and the parameters its loss does not reach.

The loss is the sum of the logits: every path to the training loss passes through them, and a sum
reaches whatever any logit depends on. Activation checkpointing is never enabled here (built
models have it off), so the graph shows every parameter the forward used.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mmfreeze.models.build import build_fake_model
from mmfreeze.reachability.graph import unreached_names
from mmfreeze.reachability.shrink import shrunken

if TYPE_CHECKING:
    import torch
    from torch import nn
    from transformers import PretrainedConfig

TEXT = "text"
TEXT_IMAGE = "text+image"
META = "meta-device forward"
FAKE = "FakeTensorMode forward at full size"
SHRUNKEN = "forward and backward of a shrunken config (every depth kept) on the CPU"
TEXT_TOKENS = 16

LOSS_MODULE: Mapping[str, str] = MappingProxyType({
    "Qwen2_5OmniForConditionalGeneration": "thinker",
    "Qwen3OmniMoeForConditionalGeneration": "thinker",
})
"""Classes whose own ``forward`` is not what training runs: the loss is this submodule's (the
Omni models' thinker; the talker and token2wav only generate speech)."""


@dataclass(frozen=True, kw_only=True)
class Reachability:
    """What one forward of one data mix leaves unreached, and how that was found."""

    mix: str
    method: str
    unreachable: frozenset[str]
    """Parameter names (``named_parameters()``) no path from the loss reaches, trainable or not."""


def text_only_on_meta(model: nn.Module) -> Reachability:
    """A text-only batch through ``model``, built on the meta device (its flags and dtype are changed:
    build it for the probe). Every parameter is made trainable, so the result covers any recipe."""
    import torch

    for parameter in model.parameters():
        parameter.requires_grad_(True)
    model.to(torch.bfloat16)  # fused MoE kernels (grouped_mm) take no float32
    forward = model.get_submodule(LOSS_MODULE.get(type(model).__name__, ""))
    input_ids = torch.ones((1, TEXT_TOKENS), dtype=torch.long, device="meta")
    with torch.enable_grad():
        output = forward(input_ids=input_ids)
    return Reachability(mix=TEXT, method=META, unreachable=unreached_names(model, _loss(output)))


def _loss(output: Any) -> torch.Tensor:
    return output.logits.float().sum()


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


IMAGE_BATCHES: Mapping[str, Callable[[PretrainedConfig, type[nn.Module]], dict[str, torch.Tensor]]] = MappingProxyType({
    "LlavaForConditionalGeneration": llava_image_batch,
    "Qwen2VLForConditionalGeneration": qwen_vl_image_batch,
    "Qwen2_5_VLForConditionalGeneration": qwen_vl_image_batch,
    "Gemma3ForConditionalGeneration": gemma3_image_batch,
})
"""Classes whose image batch is known, and the batch their processor makes."""
FAKE_IMAGE_PATH = frozenset({"LlavaForConditionalGeneration"})
"""Of those, the ones whose image path runs under ``FakeTensorMode`` at full size. Qwen2-VL's
vision attention cuts its sequence at ``cu_seqlens`` computed from the grid, and Gemma-3's
construction guards on a data-dependent value, which fake tensors cannot pass: those run on a
shrunken config instead (Gemma-3's 4,096 patches through 27 layers at width 64: about 8 s)."""


def with_an_image(config: PretrainedConfig, model_class: type[nn.Module]) -> Reachability:
    """An image batch through ``model_class`` (one of :data:`IMAGE_BATCHES`): at full size with fake
    tensors where its image path allows (:data:`FAKE_IMAGE_PATH`), else on a shrunken config."""
    if model_class.__name__ in FAKE_IMAGE_PATH:
        return image_with_fake_tensors(config, model_class)
    return image_on_shrunken_config(config, model_class)


def image_on_shrunken_config(config: PretrainedConfig, model_class: type[nn.Module]) -> Reachability:
    """An image batch through ``model_class`` at tiny widths with real tensors on the CPU, and a
    real backward: the parameters left without a gradient (:mod:`mmfreeze.reachability.shrink`)."""
    import torch

    small = shrunken(config)
    model = model_class._from_config(small)
    with torch.enable_grad():
        _loss(model(**IMAGE_BATCHES[model_class.__name__](small, model_class))).backward()
    return Reachability(mix=TEXT_IMAGE, method=SHRUNKEN, unreachable=frozenset(
        name for name, parameter in model.named_parameters() if parameter.grad is None))


def image_with_fake_tensors(config: PretrainedConfig, model_class: type[nn.Module]) -> Reachability:
    """An image batch through ``model_class`` at full size, every tensor fake (no storage): the
    LLaVA-1.5 7B run takes about a second and 0.8 GB."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    batch_of = IMAGE_BATCHES[model_class.__name__]
    mode = FakeTensorMode(shape_env=ShapeEnv())
    model = build_fake_model(config, model_class, mode)
    with mode, torch.enable_grad():
        for parameter in model.parameters():
            parameter.requires_grad_(True)
        loss = _loss(model(**batch_of(config, model_class), use_cache=False))
    return Reachability(mix=TEXT_IMAGE, method=FAKE, unreachable=unreached_names(model, loss))
