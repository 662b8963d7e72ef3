"""Setup validation and the FSDP plan: truth-table rows on tiny real models, no process group."""

from __future__ import annotations

import json

import pytest
import torch
import torch.distributed as dist
from tests.distributed.scenarios import SCENARIOS, build_model
from tests.distributed.tiny_vlms import build_tiny, resolved_modules
from torch import nn

from mmfreeze.distributed import BatchContract, build_mesh_description, parse_multimodal_config, plan_multimodal_fsdp
from mmfreeze.exceptions import DistributedConfigError
from mmfreeze.models.build import build_meta_model
from mmfreeze.resolver.spec import MultimodalModuleSpec, ResolvedMultimodalModule

ASYMMETRIC = BatchContract()
UNIFORM = BatchContract.uniform(["vision"], declared_by="test planner")


def plan(model, arch, section=None, *, contract=ASYMMETRIC, dp=2, cp=1, tp=1):
    return plan_multimodal_fsdp(
        model,
        resolved_modules(model, arch),
        config=parse_multimodal_config(section or {}, known_modalities={"vision"}),
        contract=contract,
        mesh=build_mesh_description(dp=dp, cp=cp, tp=tp),
    )


def rejected(*args, **kwargs) -> str:
    with pytest.raises(DistributedConfigError) as error:
        plan(*args, **kwargs)
    return str(error.value)


@pytest.fixture
def trainable_qwen():
    return build_model(SCENARIOS["dummy_qwen2_vl"])


@pytest.fixture
def frozen_llava():
    return build_model(SCENARIOS["frozen_root_asymmetric"])


def test_trainable_tower_without_dummy_is_rejected_before_any_collective(trainable_qwen):
    """trainable conditional tower | asymmetric contract | run_dummy_forward false -> rejected,
    naming the module and the fix; no process group exists."""
    message = rejected(trainable_qwen, "qwen2_vl", {"vision": {"run_dummy_forward": False}})
    assert not dist.is_initialized()
    assert "distributed.multimodal.vision.run_dummy_forward: false, but model.visual, model.visual.merger" in message
    assert "Fix: set distributed.multimodal.vision.run_dummy_forward: auto" in message


def test_auto_enables_dummy_for_trainable_tower_under_asymmetric_execution(trainable_qwen):
    """trainable conditional tower | asymmetric | auto | model capable -> dummy enabled."""
    decision = plan(trainable_qwen, "qwen2_vl").dummy_forward[0]
    assert (decision.required, decision.enabled) == (True, True)
    assert "model.visual" in decision.reason


def test_auto_leaves_dummy_off_under_rank_uniform_contract(trainable_qwen):
    """trainable conditional tower | rank-uniform contract | auto -> not required, off."""
    decision = plan(trainable_qwen, "qwen2_vl", contract=UNIFORM).dummy_forward[0]
    assert (decision.required, decision.enabled) == (False, False)
    assert "test planner" in decision.reason


def test_auto_leaves_dummy_off_for_fully_frozen_vision(frozen_llava):
    """frozen tower and projector | asymmetric | auto | root -> accepted, no dummy, root-owned."""
    result = plan(frozen_llava, "llava")
    assert not result.dummy_modalities
    assert result.root_owned == ("model.vision_tower", "model.multi_modal_projector")


def test_frozen_per_layer_under_asymmetric_contract_is_rejected(frozen_llava):
    """frozen conditional tower | per_layer | asymmetric -> rejected with the fix."""
    message = rejected(frozen_llava, "llava", {"frozen_sharding": "per_layer"})
    assert "per_layer gives frozen, conditionally executed model.vision_tower its own FSDP units" in message
    assert "Fix: frozen_sharding: root or replicate for vision" in message


def test_frozen_per_layer_accepted_under_uniform_contract_or_always_check(frozen_llava):
    """frozen conditional tower | per_layer | uniform contract, or validate always -> accepted."""
    units = [u.path for u in plan(frozen_llava, "llava", {"frozen_sharding": "per_layer"}, contract=UNIFORM).units]
    assert units[:2] == ["model.vision_tower.encoder.layers.0", "model.vision_tower.encoder.layers.1"]
    checked = plan(frozen_llava, "llava", {"frozen_sharding": "per_layer", "validate_rank_uniform_execution": "always"})
    assert checked.notes


def test_per_modality_override_beats_top_level_default(frozen_llava):
    result = plan(frozen_llava, "llava", {"frozen_sharding": "per_layer", "vision": {"frozen_sharding": "replicate"}})
    assert result.replicated == ("model.vision_tower", "model.multi_modal_projector")


def test_dummy_required_but_model_cannot_is_rejected():
    """trainable conditional module | asymmetric | auto | no dummy implementation -> rejected."""
    model = nn.Module()
    model.encoder = nn.Linear(2, 2)
    resolved = [ResolvedMultimodalModule(spec=MultimodalModuleSpec(path="encoder", modality="vision"), module=model.encoder, source="caller")]
    config = parse_multimodal_config({}, known_modalities={"vision"})
    with pytest.raises(DistributedConfigError, match="Module cannot run one for 'vision'"):
        plan_multimodal_fsdp(model, resolved, config=config, contract=ASYMMETRIC, mesh=build_mesh_description(dp=2))
    explicit = parse_multimodal_config({"vision": {"run_dummy_forward": True}}, known_modalities={"vision"})
    with pytest.raises(DistributedConfigError, match="true, but Module has no dummy forward for 'vision'"):
        plan_multimodal_fsdp(model, resolved, config=explicit, contract=UNIFORM, mesh=build_mesh_description(dp=2))


def test_frame_sharding_mesh_dims_other_than_cp_rejected(frozen_llava):
    """frame_sharding.mesh_dims [cp, tp] -> rejected: only [cp] is supported."""
    message = rejected(frozen_llava, "llava", {"vision": {"frame_sharding": {"enabled": True, "mesh_dims": ["cp", "tp"]}}}, cp=2, tp=2)
    assert "frame_sharding.mesh_dims: ['cp', 'tp'] is not supported; the only supported value is [cp]" in message


def test_frame_sharding_on_mesh_without_cp_rejected(frozen_llava):
    """frame_sharding [cp] | mesh dp only -> rejected, listing the mesh's dimensions."""
    message = rejected(frozen_llava, "llava", {"vision": {"frame_sharding": {"enabled": True}}})
    assert "[cp], but the device mesh has no cp dimension (dimensions: ['dp'])" in message
    assert plan(frozen_llava, "llava", {"vision": {"frame_sharding": {"enabled": True}}}, cp=2).mesh.has("cp")


def test_frame_sharding_conflicts_with_per_layer(frozen_llava):
    """frame_sharding [cp] | per_layer | uniform contract -> rejected: both partition the tower."""
    message = rejected(frozen_llava, "llava", {"frozen_sharding": "per_layer", "vision": {"frame_sharding": {"enabled": True}}}, contract=UNIFORM, cp=2)
    assert "frame_sharding splits model.vision_tower's frames over cp while frozen_sharding: per_layer" in message


def test_frame_sharding_makes_trainable_tower_need_dummy(trainable_qwen):
    """trainable tower | uniform contract | frame sharding (ranks may get no frames) -> dummy on."""
    result = plan(trainable_qwen, "qwen2_vl", {"vision": {"frame_sharding": {"enabled": True}}}, contract=UNIFORM, cp=2)
    assert result.dummy_forward[0].enabled


def test_one_error_lists_every_problem(trainable_qwen):
    message = rejected(trainable_qwen, "qwen2_vl", {"vision": {"run_dummy_forward": False, "frame_sharding": {"enabled": True, "mesh_dims": ["tp"]}}})
    assert message.count("\n  - ") == 2


def test_offline_plan_on_meta_model_describes_units_and_decisions():
    """explain: meta-device model + mesh from recipe sizes -> a JSON-able plan, no storage used."""
    live = build_tiny("qwen2_vl")
    model = build_meta_model(live.config, type(live))
    assert next(model.parameters()).device == torch.device("meta")
    summary = plan(model, "qwen2_vl", dp=4, cp=2).describe()
    json.dumps(summary)
    assert summary["verdict"] == "accepted"
    assert summary["mesh"] == {"dims": {"dp": 4, "cp": 2}, "fsdp_dim": "dp"}
    assert [u["path"] for u in summary["fsdp_units"]] == [
        "model.visual.merger", "model.visual.blocks.0", "model.visual.blocks.1",
        "model.language_model.layers.0", "model.language_model.layers.1", "<root>",
    ]
    assert summary["dummy_forward"]["vision"]["enabled"] is True
