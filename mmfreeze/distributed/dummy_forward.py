"""The model-owned dummy-forward protocol and its implementations for plain transformers classes.

A trainable tower or projector that one rank skips on a text-only microbatch leaves that rank out
of the module's FSDP collectives (a crash or a hang) and out of its gradient. The remedy is to run
the skipped conditional path on the cheapest valid dummy input and add the result to the graph
with weight zero: every rank then traverses the same trainable modules and the loss is unchanged.
Only the model knows that input and how the tower feeds its projector / embedder / resampler, so
the mechanism is model-owned (PROPOSAL.md, "Why run_dummy_forward is needed").

A model class we own sets ``mmfreeze_dummy_forward = SomeDummyForward()``; plain transformers
classes are covered by :data:`DUMMY_FORWARD_TABLE`, keyed by class name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import torch
    from torch import nn

# Forward keyword arguments whose presence means a modality's conditional path runs.
DEFAULT_MODALITY_INPUTS: Mapping[str, tuple[str, ...]] = {
    "vision": ("pixel_values", "pixel_values_videos"),
    "audio": ("input_features", "input_values", "audio_values"),
}


class DummyForward:
    """How one architecture runs a modality's conditional path on a dummy input.

    A variant sets the class attributes and implements :meth:`run`.
    """

    modalities: ClassVar[frozenset[str]] = frozenset()
    """Modalities this implementation can run a dummy forward for."""
    modality_inputs: ClassVar[Mapping[str, tuple[str, ...]]] = DEFAULT_MODALITY_INPUTS
    """Forward keyword arguments whose presence means a modality executes in this microbatch."""
    language_model_path: ClassVar[str] = "model.language_model"
    """The always-executed module that consumes the tower output as ``inputs_embeds``: the dummy
    result joins the graph there, at the same point as a real tower output would."""

    def run(self, model: nn.Module, modality: str, *, device: torch.device) -> torch.Tensor:
        """Run ``modality``'s tower and trainable adapters on a dummy input; a scalar result."""
        raise NotImplementedError


class Qwen2VLDummyForward(DummyForward):
    """Qwen2-VL: one image of a single merge window (spatial_merge_size² patches, one frame)."""

    modalities = frozenset({"vision"})

    def run(self, model: nn.Module, modality: str, *, device: torch.device) -> torch.Tensor:
        import torch

        vision = model.config.vision_config
        merge = vision.spatial_merge_size
        patch_dim = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
        grid_thw = torch.tensor([[1, merge, merge]], device=device)
        pixels = torch.zeros(merge * merge, patch_dim, device=device, dtype=_float_dtype(model))
        features = model.model.get_image_features(pixels, grid_thw, return_dict=True)
        return _scalar(features.pooler_output)


class ImageFeaturesDummyForward(DummyForward):
    """Llava / Gemma3 style: one blank image at the tower's fixed size through the projector."""

    modalities = frozenset({"vision"})

    def run(self, model: nn.Module, modality: str, *, device: torch.device) -> torch.Tensor:
        import torch

        vision = model.config.vision_config
        size = vision.image_size
        shape = (1, getattr(vision, "num_channels", 3), size, size)
        pixels = torch.zeros(shape, device=device, dtype=_float_dtype(model))
        features = model.model.get_image_features(pixel_values=pixels, return_dict=True)
        return _scalar(features.pooler_output)


DUMMY_FORWARD_TABLE: Mapping[str, DummyForward] = {
    "Qwen2VLForConditionalGeneration": Qwen2VLDummyForward(),
    "LlavaForConditionalGeneration": ImageFeaturesDummyForward(),
    "Gemma3ForConditionalGeneration": ImageFeaturesDummyForward(),
}


def get_dummy_forward(model: nn.Module) -> DummyForward | None:
    """The model's own declaration, else the table entry for its class (or a base class)."""
    declared = getattr(model, "mmfreeze_dummy_forward", None)
    if isinstance(declared, DummyForward):
        return declared
    # Walk the MRO: FSDP2 and user subclasses rename the class but keep the original as a base.
    for cls in type(model).__mro__:
        if cls.__name__ in DUMMY_FORWARD_TABLE:
            return DUMMY_FORWARD_TABLE[cls.__name__]
    return None


def get_executed_modalities(model: nn.Module, forward_kwargs: Mapping[str, Any]) -> frozenset[str]:
    """Modalities whose conditional path this forward call will run, read from its inputs."""
    dummy = get_dummy_forward(model)
    inputs = dummy.modality_inputs if dummy is not None else DEFAULT_MODALITY_INPUTS
    return frozenset(
        modality
        for modality, names in inputs.items()
        if any(forward_kwargs.get(name) is not None for name in names)
    )


def _float_dtype(model: nn.Module) -> torch.dtype:
    return next(p.dtype for p in model.parameters() if p.is_floating_point())


def _scalar(features: Any) -> torch.Tensor:
    # Architectures return one tensor or a tuple / list of per-image tensors.
    if isinstance(features, (list, tuple)):
        return sum(item.sum() for item in features)
    return features.sum()
