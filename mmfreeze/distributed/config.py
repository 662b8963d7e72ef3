"""The typed `distributed.multimodal` section of a recipe, parsed and checked in one place.

Only shape and types are checked here. Whether a policy is *safe* for a model, a batch contract
and a device mesh is setup validation (:mod:`mmfreeze.distributed.plan`), which needs live facts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from mmfreeze.exceptions import DistributedConfigError

FrozenSharding = Literal["root", "per_layer", "replicate"]
DummyForwardSetting = Literal["auto", True, False]
UniformityCheck = Literal[False, "always"] | int

CONFIG_KEY = "distributed.multimodal"
FROZEN_SHARDING_VALUES: tuple[str, ...] = get_args(FrozenSharding)


@dataclass(frozen=True, kw_only=True)
class FrameShardingConfig:
    """Split one modality's encoder frames over mesh dimensions (was `cp_vision_frame_sharding`)."""

    enabled: bool = False
    """Off by default; the encoder then runs on every frame on every rank that executes it."""
    mesh_dims: tuple[str, ...] = ("cp",)
    """Mesh dimensions the frames are split over; only `[cp]` is supported (checked at setup)."""
    min_tokens: int = 2048
    """Below this many encoder tokens the frames stay replicated."""
    cost_alpha: Literal["auto"] | int | None = "auto"
    """Cost-model weight for balancing frames across ranks: `auto`, an integer, or null (off)."""


@dataclass(frozen=True, kw_only=True)
class ModalityPolicy:
    """Policies for one modality's resolved modules (e.g. `distributed.multimodal.vision`)."""

    frozen_sharding: FrozenSharding | None = None
    """Override of the top-level `frozen_sharding` for this modality; None inherits it."""
    frame_sharding: FrameShardingConfig = field(default_factory=FrameShardingConfig)
    run_dummy_forward: DummyForwardSetting = "auto"
    """`auto` derives the need from strategy, live requires_grad, conditional flags and the batch
    contract; `true` / `false` force it, and are validated the same way."""


@dataclass(frozen=True, kw_only=True)
class MultimodalDistributedConfig:
    """The whole `distributed.multimodal` section."""

    frozen_sharding: FrozenSharding = "root"
    """FSDP ownership of fully frozen resolved modules: stay in the root unit (`root`), get their
    own layer-level units (`per_layer`), or stay out of FSDP as replicated tensors (`replicate`)."""
    validate_rank_uniform_execution: UniformityCheck = False
    """Runtime check that all ranks execute the same modalities: off, the first N steps
    (diagnostic only), or `always` (turns a would-be hang into an error on every step)."""
    modalities: Mapping[str, ModalityPolicy] = field(default_factory=dict)
    """Per-modality sections, keyed by a modality name the resolver reported."""

    def policy_for(self, modality: str) -> ModalityPolicy:
        """The section for ``modality``, or the defaults when the recipe has none."""
        return self.modalities.get(modality, ModalityPolicy())

    def frozen_sharding_for(self, modality: str) -> FrozenSharding:
        """The effective frozen sharding for ``modality``: its override, else the top-level one."""
        return self.policy_for(modality).frozen_sharding or self.frozen_sharding
