"""`distributed.multimodal`: FSDP2 policy for resolved multimodal modules, validated at setup.

Order of use at training time (after freezing and PEFT, with a live device mesh)::

    config = parse_multimodal_config(recipe["distributed"]["multimodal"], known_modalities=...)
    plan = plan_multimodal_fsdp(model, resolved, config=config, contract=contract,
                                mesh=get_mesh_description(device_mesh))
    apply_multimodal_fsdp(model, plan, device_mesh)
    apply_uniformity_check(model, plan)      # optional, per config
    apply_dummy_forward(model, plan)

Offline (`mmfreeze explain`): the same ``plan_multimodal_fsdp`` on a meta-device model with
``build_mesh_description(dp=..., tp=..., cp=...)``, then ``plan.describe()``.
"""

from mmfreeze.distributed.apply import apply_multimodal_fsdp
from mmfreeze.distributed.batch_contract import BatchContract
from mmfreeze.distributed.config import (
    FrameShardingConfig,
    ModalityPolicy,
    MultimodalDistributedConfig,
    parse_multimodal_config,
)
from mmfreeze.distributed.dummy_forward import (
    DUMMY_FORWARD_TABLE,
    DummyForward,
    get_dummy_forward,
    get_executed_modalities,
)
from mmfreeze.distributed.dummy_hooks import apply_dummy_forward
from mmfreeze.distributed.mesh import MeshDescription, build_mesh_description, get_mesh_description
from mmfreeze.distributed.plan import (
    DummyForwardDecision,
    FsdpUnit,
    ModulePlacement,
    MultimodalFsdpPlan,
    plan_multimodal_fsdp,
)
from mmfreeze.distributed.uniformity import apply_uniformity_check, check_rank_uniform_execution

__all__ = [
    "DUMMY_FORWARD_TABLE",
    "BatchContract",
    "DummyForward",
    "DummyForwardDecision",
    "FrameShardingConfig",
    "FsdpUnit",
    "MeshDescription",
    "ModalityPolicy",
    "ModulePlacement",
    "MultimodalDistributedConfig",
    "MultimodalFsdpPlan",
    "apply_dummy_forward",
    "apply_multimodal_fsdp",
    "apply_uniformity_check",
    "build_mesh_description",
    "check_rank_uniform_execution",
    "get_dummy_forward",
    "get_executed_modalities",
    "get_mesh_description",
    "parse_multimodal_config",
    "plan_multimodal_fsdp",
]
