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
    """Below this many encoder tokens the frames stay replicated, unless ``min_frames`` is reached."""
    min_frames: int = 32
    """This many independent frames select sharding even below ``min_tokens`` (nemo-automodel 0.7)."""
    min_local_patch_rows: int = 96
    """Each rank with real frames pads its shard with zero frames up to this many patch rows; 0 turns
    padding off (nemo-automodel 0.7)."""
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


_TOP_LEVEL_KEYS = ("frozen_sharding", "validate_rank_uniform_execution", "batch_contract")
"""``batch_contract`` is the data side's declaration (``batch_contract.py``), read there."""
_MODALITY_KEYS = ("frozen_sharding", "frame_sharding", "run_dummy_forward")
FRAME_SHARDING_KEYS = ("enabled", "mesh_dims", "min_tokens", "min_frames", "min_local_patch_rows", "cost_alpha")
"""nemo-automodel 0.7's ``CpVisionFrameShardingConfig`` fields, with its defaults above."""


def parse_multimodal_config(
    section: Mapping[str, Any] | None,
    *,
    known_modalities: Collection[str],
    source: str | None = None,
) -> MultimodalDistributedConfig:
    """Parse a recipe's `distributed.multimodal` mapping; one error lists every problem.

    ``known_modalities`` are the modality names the resolver reported for the model: any of them
    may have a section, and any other non-policy key is rejected.
    """
    problems: list[str] = []
    section = _mapping(section or {}, CONFIG_KEY, problems)
    modalities: dict[str, ModalityPolicy] = {}
    for key, value in section.items():
        if key in _TOP_LEVEL_KEYS:
            continue
        if key in known_modalities:
            modalities[key] = _parse_modality(value, f"{CONFIG_KEY}.{key}", problems)
        else:
            problems.append(
                f"{CONFIG_KEY}.{key}: unknown key {key!r}; valid keys are {', '.join(_TOP_LEVEL_KEYS)} "
                f"and the model's modalities ({', '.join(sorted(known_modalities)) or 'none resolved'})"
            )
    config = MultimodalDistributedConfig(
        frozen_sharding=_frozen_sharding(section.get("frozen_sharding", "root"), f"{CONFIG_KEY}.frozen_sharding", problems),
        validate_rank_uniform_execution=_uniformity_check(section.get("validate_rank_uniform_execution", False), problems),
        modalities=modalities,
    )
    if problems:
        raise DistributedConfigError("invalid configuration:\n  - " + "\n  - ".join(problems), source=source)
    return config


def _parse_modality(value: Any, key: str, problems: list[str]) -> ModalityPolicy:
    section = _mapping(value, key, problems)
    _reject_unknown(section, _MODALITY_KEYS, key, problems)
    frozen = section.get("frozen_sharding")
    dummy = section.get("run_dummy_forward", "auto")
    if not (dummy == "auto" or isinstance(dummy, bool)):
        problems.append(f"{key}.run_dummy_forward: {dummy!r} is not one of auto, true, false")
        dummy = "auto"
    return ModalityPolicy(
        frozen_sharding=None if frozen is None else _frozen_sharding(frozen, f"{key}.frozen_sharding", problems),
        frame_sharding=_parse_frame_sharding(section.get("frame_sharding", {}), f"{key}.frame_sharding", problems),
        run_dummy_forward=dummy,
    )


def _parse_frame_sharding(value: Any, key: str, problems: list[str]) -> FrameShardingConfig:
    section = _mapping(value, key, problems)
    _reject_unknown(section, FRAME_SHARDING_KEYS, key, problems)
    defaults = FrameShardingConfig()
    enabled = section.get("enabled", defaults.enabled)
    if not isinstance(enabled, bool):
        problems.append(f"{key}.enabled: {enabled!r} is not true or false")
        enabled = defaults.enabled
    mesh_dims = section.get("mesh_dims", list(defaults.mesh_dims))
    if not isinstance(mesh_dims, (list, tuple)) or not all(isinstance(d, str) for d in mesh_dims):
        problems.append(f"{key}.mesh_dims: {mesh_dims!r} is not a list of mesh dimension names, e.g. [cp]")
        mesh_dims = defaults.mesh_dims
    counts = {name: _count(section.get(name, getattr(defaults, name)), f"{key}.{name}", getattr(defaults, name), problems)
              for name in ("min_tokens", "min_frames", "min_local_patch_rows")}
    cost_alpha = section.get("cost_alpha", defaults.cost_alpha)
    if not (cost_alpha is None or cost_alpha == "auto" or (_is_int(cost_alpha) and cost_alpha >= 0)):
        problems.append(f"{key}.cost_alpha: {cost_alpha!r} is not one of auto, a non-negative integer, null")
        cost_alpha = defaults.cost_alpha
    return FrameShardingConfig(enabled=enabled, mesh_dims=tuple(mesh_dims), cost_alpha=cost_alpha, **counts)


def _count(value: Any, key: str, default: int, problems: list[str]) -> int:
    if _is_int(value) and value >= 0:
        return value
    problems.append(f"{key}: {value!r} is not a non-negative integer")
    return default


def _frozen_sharding(value: Any, key: str, problems: list[str]) -> FrozenSharding:
    if value in FROZEN_SHARDING_VALUES:
        return value
    problems.append(f"{key}: {value!r} is not one of {', '.join(FROZEN_SHARDING_VALUES)}")
    return "root"


def _uniformity_check(value: Any, problems: list[str]) -> UniformityCheck:
    # `true` is rejected rather than guessed: it could mean "always" or "a few steps".
    if value is False or value == "always" or (_is_int(value) and value > 0):
        return value
    problems.append(
        f"{CONFIG_KEY}.validate_rank_uniform_execution: {value!r} is not one of "
        "false, a positive number of diagnostic steps, always"
    )
    return False


def _mapping(value: Any, key: str, problems: list[str]) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    problems.append(f"{key}: expected a mapping, got {type(value).__name__} {value!r}")
    return {}


def _reject_unknown(section: Mapping[str, Any], valid: tuple[str, ...], key: str, problems: list[str]) -> None:
    for name in section:
        if name not in valid:
            problems.append(f"{key}.{name}: unknown key {name!r}; valid keys are {', '.join(valid)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
