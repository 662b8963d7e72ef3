"""Tiny configs of real transformers VLM classes, real (seeded, materialised) weights and batches.

Shared by the single-process tests, the multi-process worker and the single-process references,
so every one of them builds bit-identical models and batches.
"""

from __future__ import annotations

import torch
from transformers import (
    LlavaConfig,
    LlavaForConditionalGeneration,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
)
from transformers.utils import logging as hf_logging

from mmfreeze.resolver import resolve_multimodal_modules
from mmfreeze.resolver.spec import MultimodalModuleSpec, ResolvedMultimodalModule

hf_logging.set_verbosity_error()

IMAGE_TOKEN = 100
_TEXT = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256)

# Declared to the resolver explicitly, so these tests do not depend on its per-class table.
SPECS = {
    "qwen2_vl": (
        MultimodalModuleSpec(path="model.visual", modality="vision", role="tower"),
        MultimodalModuleSpec(path="model.visual.merger", modality="vision", role="projector"),
    ),
    "llava": (
        MultimodalModuleSpec(path="model.vision_tower", modality="vision", role="tower"),
        MultimodalModuleSpec(path="model.multi_modal_projector", modality="vision", role="projector"),
    ),
}


def build_tiny(arch: str) -> torch.nn.Module:
    """A freshly seeded tiny model: same weights in every process."""
    torch.manual_seed(0)
    if arch == "qwen2_vl":
        config = Qwen2VLConfig(
            text_config={**_TEXT, "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]}},
            vision_config=dict(depth=2, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=4,
                               temporal_patch_size=2, spatial_merge_size=2, in_channels=3),
            image_token_id=IMAGE_TOKEN, video_token_id=101, vision_start_token_id=102, vision_end_token_id=103,
        )
        return Qwen2VLForConditionalGeneration(config)
    config = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=2, image_size=8, patch_size=4),
        text_config={**_TEXT, "model_type": "llama"},
        image_token_id=IMAGE_TOKEN, vision_feature_layer=-1,
    )
    return LlavaForConditionalGeneration(config)


def resolved_modules(model: torch.nn.Module, arch: str) -> tuple[ResolvedMultimodalModule, ...]:
    return resolve_multimodal_modules(model, declared_specs=SPECS[arch])


def build_batch(arch: str, kind: str, seed: int) -> dict[str, torch.Tensor]:
    """One microbatch: ``kind`` is ``image`` or ``text``; labels ignore image placeholders."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 96, (1, 12), generator=generator)
    batch: dict[str, torch.Tensor] = {}
    if kind == "image" and arch == "qwen2_vl":
        ids[0, 2:5] = torch.tensor([102, IMAGE_TOKEN, 103])  # one merged 2x2 patch window
        batch["pixel_values"] = torch.randn(4, 3 * 2 * 4 * 4, generator=generator)
        batch["image_grid_thw"] = torch.tensor([[1, 2, 2]])
        batch["mm_token_type_ids"] = (ids == IMAGE_TOKEN).int()
    elif kind == "image":
        ids[0, 2:6] = IMAGE_TOKEN  # 8x8 image, 4x4 patches: 4 features
        batch["pixel_values"] = torch.randn(1, 3, 8, 8, generator=generator)
    batch["input_ids"] = ids
    batch["labels"] = ids.masked_fill(ids >= IMAGE_TOKEN, -100)
    return batch
