"""The framework functions mmfreeze's runtime integration may replace, grouped by the need of a
recipe that patches them (:attr:`mmfreeze.nemo.context.RunContext.needs`), each with why.

A hook point names a framework module and attribute (private ones included: ``_dist_utils``,
``_coerce_param_group_overrides``), and the framework functions that must still look it up for a
replacement to reach the framework's own caller. :mod:`mmfreeze.nemo.hooks` resolves and replaces
them, all or none; :mod:`mmfreeze.nemo.installation` says what each group does.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmfreeze.boundary.names import DIST_UTILS, INFRASTRUCTURE, MODEL_UTILS, OPTIMIZER, PARALLELIZER


@dataclass(frozen=True, kw_only=True)
class HookPoint:
    """``module:attribute`` (``attribute`` may be ``Class.method``) and why the integration needs it."""

    module: str
    attribute: str
    why: str
    used_by: tuple[tuple[str, str, str], ...] = ()
    """``(module, function, name)``: the framework function (``Class.method`` allowed) that must
    still look ``name`` up when it runs, so that replacing this point reaches the framework's own
    caller."""

    def describe(self) -> str:
        return f"{self.module}:{self.attribute}"


PARSE_AT_RECIPE = HookPoint(module=MODEL_UTILS, attribute="parse_freeze_config",
                            why="the recipe boundary and direct callers parse freeze_config")
PARSE_AT_BUILD = HookPoint(module=INFRASTRUCTURE, attribute="parse_freeze_config",
                           why="apply_model_infrastructure parses freeze_config again",
                           used_by=((INFRASTRUCTURE, "apply_model_infrastructure", "parse_freeze_config"),))
APPLY_IN_POLICY = HookPoint(module=INFRASTRUCTURE, attribute="apply_parameter_freezing",
                            why="the freeze step of _apply_trainability_policy",
                            used_by=((INFRASTRUCTURE, "_apply_trainability_policy", "apply_parameter_freezing"),))
APPLY_DIRECT = HookPoint(module=MODEL_UTILS, attribute="apply_parameter_freezing",
                         why="direct callers apply freeze_config")
PARSE_DISTRIBUTED = HookPoint(module=DIST_UTILS, attribute="parse_distributed_section",
                              why="the distributed section is turned into the framework's typed config",
                              used_by=((DIST_UTILS, "create_distributed_setup_from_config", "parse_distributed_section"),))
PARALLELIZE = HookPoint(module=PARALLELIZER, attribute="ModelParallelizer.parallelize",
                        why="mmfreeze's distributed additions act at its FSDP hook",
                        used_by=((PARALLELIZER, "ModelParallelizer._apply", "_apply_fsdp_sharding"),))
COERCE_OVERRIDES = HookPoint(
    module=OPTIMIZER, attribute="_coerce_param_group_overrides",
    why="param_group_overrides entries become ParamGroupOverride objects there",
    used_by=((OPTIMIZER, "OptimizerConfig.__post_init__", "_coerce_param_group_overrides"),
             (OPTIMIZER, "OptimizerFromFactoryConfig.build", "_coerce_param_group_overrides")))
DION_CONFIG_BASE = "_DionConfigBase"
"""The Dion optimizers' config base: they group parameters themselves and ignore rate overrides."""
TP_PLAN_FUNCTION = "_get_parallel_plan"
"""In :data:`~mmfreeze.boundary.names.PARALLELIZER`: the framework's choice of a model's tensor-parallel plan, read
(never replaced) by the memory model."""
TP_MESH_CHECK = "validate_tp_mesh"
"""Beside it: the framework's check that a model's attention heads divide the TP size (it reads the mesh's size)."""
TP_LORA_STYLES = {"ColwiseParallelLora": "ColwiseParallel", "RowwiseParallelLora": "RowwiseParallel",
                  "SequenceParallelLora": "SequenceParallel"}
"""In :data:`~mmfreeze.boundary.names.PARALLEL_STYLES`: the LoRA variant of each torch style, which the framework's
parallelizer applies in its place (``translate_to_lora``, swapping the class of the plan's own style objects)."""
TP_LOCAL_STYLE = "ReplicatedWithGradAllReduce"
"""In :data:`~mmfreeze.boundary.names.PARALLEL_STYLES`: the framework's style that keeps a module's parameters local
(whole on every tensor-parallel rank) and only marks their gradients to be summed over the TP ranks."""
OPTIMIZER_CONFIGS_WITH_BUILD = ("OptimizerConfig", DION_CONFIG_BASE, "OptimizerFromFactoryConfig")
"""Every optimizer config class of 0.7.0 that defines its own ``build`` (the typed configs, the
Dion family, and ``_target_: torch.optim.X`` recipes through the factory config)."""
BUILD_OPTIMIZER = tuple(
    HookPoint(module=OPTIMIZER, attribute=f"{name}.build",
              why="selector rate entries are resolved on the model at each optimizer build")
    for name in OPTIMIZER_CONFIGS_WITH_BUILD
)
HOOK_GROUPS: dict[str, tuple[HookPoint, ...]] = {
    "freeze": (PARSE_AT_RECIPE, PARSE_AT_BUILD, APPLY_IN_POLICY, APPLY_DIRECT),
    "rates": (COERCE_OVERRIDES, *BUILD_OPTIMIZER),
    "distributed": (PARSE_DISTRIBUTED, PARALLELIZE),
}
"""What each need of a recipe (:attr:`RunContext.needs`) patches."""
