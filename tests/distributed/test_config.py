"""Parsing `distributed.multimodal`: defaults, every field, and errors that quote and list."""

from __future__ import annotations

import pytest

from mmfreeze.distributed import FrameShardingConfig, ModalityPolicy, parse_multimodal_config
from mmfreeze.exceptions import DistributedConfigError

KNOWN = {"vision", "audio"}


def test_absent_section_gives_defaults():
    """No section -> root, no runtime check, every modality auto with frame sharding off."""
    config = parse_multimodal_config(None, known_modalities=KNOWN)
    assert config.frozen_sharding == "root"
    assert config.validate_rank_uniform_execution is False
    assert config.policy_for("vision") == ModalityPolicy()
    assert config.frozen_sharding_for("audio") == "root"


def test_full_section_parses_every_field():
    config = parse_multimodal_config(
        {
            "frozen_sharding": "replicate",
            "validate_rank_uniform_execution": 50,
            "vision": {
                "frame_sharding": {"enabled": True, "mesh_dims": ["cp"], "min_tokens": 4096, "min_frames": 8,
                                   "min_local_patch_rows": 0, "cost_alpha": 3},
                "run_dummy_forward": False,
            },
            "audio": {"frozen_sharding": "per_layer", "run_dummy_forward": True},
        },
        known_modalities=KNOWN,
    )
    assert config.validate_rank_uniform_execution == 50
    assert config.policy_for("vision").frame_sharding == FrameShardingConfig(
        enabled=True, mesh_dims=("cp",), min_tokens=4096, min_frames=8, min_local_patch_rows=0, cost_alpha=3
    )
    assert config.frozen_sharding_for("vision") == "replicate"
    assert config.frozen_sharding_for("audio") == "per_layer"
    assert config.policy_for("audio").run_dummy_forward is True


@pytest.mark.parametrize("value", [False, 1, "always"])
def test_uniformity_check_values(value):
    assert parse_multimodal_config({"validate_rank_uniform_execution": value}, known_modalities=KNOWN).validate_rank_uniform_execution == value


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"frozen_sharding": "layer"}, "distributed.multimodal.frozen_sharding: 'layer' is not one of root, per_layer, replicate"),
        ({"audio": {"frozen_sharding": "shard"}}, "distributed.multimodal.audio.frozen_sharding: 'shard' is not one of root, per_layer, replicate"),
        ({"validate_rank_uniform_execution": True}, "True is not one of false, a positive number of diagnostic steps, always"),
        ({"validate_rank_uniform_execution": 0}, "0 is not one of false"),
        ({"video": {}}, "distributed.multimodal.video: unknown key 'video'; valid keys are frozen_sharding, validate_rank_uniform_execution, batch_contract and the model's modalities (audio, vision)"),
        ({"vision": {"dummy": True}}, "distributed.multimodal.vision.dummy: unknown key 'dummy'; valid keys are frozen_sharding, frame_sharding, run_dummy_forward"),
        ({"vision": {"run_dummy_forward": "yes"}}, "run_dummy_forward: 'yes' is not one of auto, true, false"),
        ({"vision": {"run_dummy_forward": 1}}, "run_dummy_forward: 1 is not one of auto, true, false"),
        ({"vision": {"frame_sharding": {"enabled": "on"}}}, "vision.frame_sharding.enabled: 'on' is not true or false"),
        ({"vision": {"frame_sharding": {"mesh_dims": "cp"}}}, "mesh_dims: 'cp' is not a list of mesh dimension names"),
        ({"vision": {"frame_sharding": {"min_tokens": -1}}}, "min_tokens: -1 is not a non-negative integer"),
        ({"vision": {"frame_sharding": {"min_frames": True}}}, "min_frames: True is not a non-negative integer"),
        ({"vision": {"frame_sharding": {"min_local_patch_rows": -2}}}, "min_local_patch_rows: -2 is not a non-negative integer"),
        ({"vision": {"frame_sharding": {"cost_alpha": -1}}}, "cost_alpha: -1 is not one of auto, a non-negative integer, null"),
        ({"vision": {"frame_sharding": {"cost_alpha": 0.5}}}, "cost_alpha: 0.5 is not one of auto, a non-negative integer, null"),
        ({"vision": {"frame_sharding": {"axes": ["cp"]}}}, "frame_sharding.axes: unknown key 'axes'"),
        ({"vision": ["cp"]}, "distributed.multimodal.vision: expected a mapping, got list"),
    ],
)
def test_invalid_values_quote_the_value_name_the_key_and_list_valid_ones(section, expected):
    with pytest.raises(DistributedConfigError) as error:
        parse_multimodal_config(section, known_modalities=KNOWN, source="recipe.yaml")
    assert expected in str(error.value)
    assert str(error.value).startswith("recipe.yaml: ")


def test_every_problem_is_reported_at_once():
    with pytest.raises(DistributedConfigError) as error:
        parse_multimodal_config({"frozen_sharding": "x", "video": {}, "vision": {"run_dummy_forward": "y"}}, known_modalities=KNOWN)
    assert str(error.value).count("\n  - ") == 3


def test_frame_sharding_defaults_are_nemo_automodel_0_7s():
    """min_frames and min_local_patch_rows exist in 0.7's CpVisionFrameShardingConfig with these
    defaults (the framework environment checks them against the class itself)."""
    config = parse_multimodal_config({"vision": {"frame_sharding": {"enabled": True}}}, known_modalities=KNOWN)
    frame = config.policy_for("vision").frame_sharding
    assert (frame.min_tokens, frame.min_frames, frame.min_local_patch_rows, frame.cost_alpha) == (2048, 32, 96, "auto")
