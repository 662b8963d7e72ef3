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

from typing import TYPE_CHECKING

from mmfreeze.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mmfreeze.distributed.apply import apply_multimodal_fsdp
    from mmfreeze.distributed.batch_contract import BatchContract
    from mmfreeze.distributed.config import FrameShardingConfig, ModalityPolicy, MultimodalDistributedConfig, parse_multimodal_config
    from mmfreeze.distributed.dummy_forward import DUMMY_FORWARD_TABLE, DummyForward, get_dummy_forward, get_executed_modalities
    from mmfreeze.distributed.dummy_hooks import apply_dummy_forward
    from mmfreeze.distributed.mesh import MeshDescription, build_mesh_description, get_mesh_description
    from mmfreeze.distributed.native import NativeSupport, native_support
    from mmfreeze.distributed.plan import DummyForwardDecision, FsdpUnit, ModulePlacement, MultimodalFsdpPlan, plan_multimodal_fsdp
    from mmfreeze.distributed.uniformity import apply_uniformity_check, check_rank_uniform_execution

# Imported on first use: the snapshot report reads `native_support` for every recipe, and must not
# pay for the planner and the FSDP application it never uses.
_EXPORTS = {
    "mmfreeze.distributed.apply": ("apply_multimodal_fsdp",),
    "mmfreeze.distributed.batch_contract": ("BatchContract",),
    "mmfreeze.distributed.config": ("FrameShardingConfig", "ModalityPolicy", "MultimodalDistributedConfig",
                                    "parse_multimodal_config"),
    "mmfreeze.distributed.dummy_forward": ("DUMMY_FORWARD_TABLE", "DummyForward", "get_dummy_forward",
                                           "get_executed_modalities"),
    "mmfreeze.distributed.dummy_hooks": ("apply_dummy_forward",),
    "mmfreeze.distributed.mesh": ("MeshDescription", "build_mesh_description", "get_mesh_description"),
    "mmfreeze.distributed.native": ("NativeSupport", "native_support"),
    "mmfreeze.distributed.plan": ("DummyForwardDecision", "FsdpUnit", "ModulePlacement", "MultimodalFsdpPlan",
                                  "plan_multimodal_fsdp"),
    "mmfreeze.distributed.uniformity": ("apply_uniformity_check", "check_rank_uniform_execution"),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
