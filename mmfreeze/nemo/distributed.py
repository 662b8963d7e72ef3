"""`distributed.multimodal`: the framework's keys through the framework, mmfreeze's additions inside its parallelisation.

``parse_distributed_section`` (``recipes/_dist_utils.py``) builds 0.7's typed section with dataclass
constructors, so the integration hands it only the keys it defines
(:data:`mmfreeze.distributed.native.FRAMEWORK_MULTIMODAL_KEYS`: their meaning, defaults and
validation stay the framework's) and parses the whole section with mmfreeze's parser.

The additions act inside ``ModelParallelizer.parallelize``, at the framework's FSDP hook
(``_apply_fsdp_sharding``, which "model-owned sidecar strategies override to change how parameters
are grouped into FSDP units"), after its activation checkpointing and trainability rebinding:

- mmfreeze's setup validation (:func:`plan_multimodal_fsdp`) runs on the live model;
- a fully frozen resolved module whose modality overrides `frozen_sharding` is placed as its
  policy says (`replicate`: kept out of every FSDP unit, its parameters passed to the framework's
  ignored set; `root`: left to the root unit; `per_layer`: the framework's own
  ``shard_multimodal_module``), and hidden from the framework's recursion, which shards the rest;
- the dummy forward and the rank-uniformity check are installed as the plan says.

The additions belong to the parse that read them: knowledge distillation with ``separate_meshes``
parses the student's section and the teacher's twice each, and each model is parallelised with the
strategy config its own parse made, which is how its additions are found again.

A run whose parallelisation never reaches that hook is refused when its section is parsed, with the
strategy that is in the way: DDP, Megatron-FSDP, the MoE parallelizer, a single device, a model on
a one-rank mesh of its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from mmfreeze.distributed.batch_contract import BatchContract, parse_batch_contract
from mmfreeze.distributed.config import CONFIG_KEY, MultimodalDistributedConfig, parse_multimodal_config
from mmfreeze.distributed.dummy_hooks import apply_dummy_forward
from mmfreeze.distributed.mesh import build_mesh_description
from mmfreeze.distributed.native import split_framework_keys
from mmfreeze.distributed.plan import MultimodalFsdpPlan, plan_multimodal_fsdp
from mmfreeze.distributed.uniformity import apply_uniformity_check
from mmfreeze.exceptions import DistributedConfigError, IntegrationError
from mmfreeze.nemo.context import RunContext
from mmfreeze.resolver.bind import resolve_multimodal_modules

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class Additions:
    """One parse's mmfreeze additions, applied when the model parsed with it is parallelised."""

    keys: tuple[str, ...]
    """The additions' key paths."""
    config: MultimodalDistributedConfig
    contract: BatchContract | None = None
    applied: list[MultimodalFsdpPlan] = field(default_factory=list)
    """The plans applied so far, one per parallelised model."""


@dataclass(kw_only=True)
class ParsedAdditions:
    """Each parse's additions, by the strategy config object the framework made in that parse."""

    by_strategy: list[tuple[Any, Additions]] = field(default_factory=list)

    def record(self, strategy_config: Any, additions: Additions) -> None:
        self.by_strategy.append((strategy_config, additions))

    def find(self, strategy_config: Any) -> Additions | None:
        return next((found for config, found in self.by_strategy if config is strategy_config), None)


def parse_hook(
    original: Callable[[dict], dict], context: RunContext, parsed: ParsedAdditions,
) -> Callable[[dict], dict]:
    """``parse_distributed_section`` that keeps mmfreeze's additions out of the framework's constructors."""

    def parse_distributed_section_with_mmfreeze(cfg_dict: dict) -> dict:
        multimodal = cfg_dict.get("multimodal")
        framework, keys = split_framework_keys(multimodal) if isinstance(multimodal, Mapping) else ({}, ())
        if not keys:
            return original(cfg_dict)
        # Any mapping key may be a modality here; the model's own are checked at parallelisation.
        modalities = [key for key, value in multimodal.items() if isinstance(value, Mapping) and key != "batch_contract"]
        additions = Additions(
            keys=keys, config=parse_multimodal_config(multimodal, known_modalities=modalities, source=context.source),
            contract=parse_batch_contract(multimodal, source=context.source))
        _refuse_unreachable(cfg_dict, additions, context)
        result = original({**cfg_dict, "multimodal": framework})
        _refuse_unsharded(result["parallelism_sizes"], additions, context)
        parsed.record(result["strategy_config"], additions)
        return result

    return parse_distributed_section_with_mmfreeze


def _refuse_unreachable(section: Mapping[str, Any], additions: Additions, context: RunContext) -> None:
    """At setup, not after full parallelisation: a strategy whose sharding never reaches the FSDP2 hook
    (``strategy`` and ``moe`` as the framework's ``parse_distributed_section`` reads them)."""
    strategy = str(section.get("strategy", "fsdp2")).lower()
    why = None
    if strategy != "fsdp2":
        why = f"this recipe's strategy is {strategy}, which does not shard through FSDP2's hook"
    elif section.get("moe") is not None:
        why = "this recipe's model is parallelised by the MoE parallelizer, which does not shard through FSDP2's hook"
    if why is not None:
        _refuse(additions, why, context)


def _refuse_unsharded(sizes: Any, additions: Additions, context: RunContext) -> None:
    """The framework skips FSDP2 on a single-rank world or a one-rank mesh (``fsdp2_sharding_enabled``):
    the mesh is the section's explicit sizes (a distillation model on its own mesh), else the world."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    mesh = world if sizes.dp_size is None else sizes.dp_size * sizes.tp_size * sizes.pp_size * sizes.cp_size
    if world == 1:
        _refuse(additions, "this run has a single device: nothing is sharded, so they would do nothing", context)
    if mesh == 1:
        _refuse(additions, "this model's mesh has one rank (its dp_size, tp_size, pp_size and cp_size are all 1): "
                "the framework does not shard it, so they would do nothing", context,
                instead="give this model's mesh several ranks (dp_size 2 or more)")


def _refuse(additions: Additions, why: str, context: RunContext, *,
            instead: str = "train with `strategy: fsdp2` without the MoE parallelizer on several devices") -> None:
    raise IntegrationError(
        f"{', '.join(additions.keys)} act where FSDP2 shards the model ({why}); remove them for this run, or {instead}",
        source=context.source, key=CONFIG_KEY)


def parallelize_hook(original: Callable[..., Any], context: RunContext, parsed: ParsedAdditions) -> Callable[..., Any]:
    """``ModelParallelizer.parallelize`` that applies the additions of the parse that made this model's setup."""

    def parallelize_with_mmfreeze(self: Any, model: Any, mesh_context: Any, /) -> Any:
        additions = parsed.find(getattr(mesh_context, "strategy_config", None))
        if additions is None:
            return original(self, model, mesh_context)
        before = len(additions.applied)
        with _fsdp_hook(self, context, additions, mesh_context):
            parallelized = original(self, model, mesh_context)
        if len(additions.applied) == before:
            raise IntegrationError(
                f"this model's parallelisation ({type(self).__name__}) does not shard through "
                f"ModelParallelizer._apply_fsdp_sharding, where mmfreeze applies {', '.join(additions.keys)}; "
                f"remove those keys for this model", source=context.source, key=CONFIG_KEY)
        return parallelized

    return parallelize_with_mmfreeze


@contextmanager
def _fsdp_hook(parallelizer: Any, context: RunContext, additions: Additions, mesh_context: Any) -> Iterator[None]:
    """For one ``parallelize`` call, route the outermost ``_apply_fsdp_sharding`` through mmfreeze."""
    framework_sharding = parallelizer._apply_fsdp_sharding  # the class's bound method

    def apply_fsdp_sharding(module: Any, mesh: Any, mp_policy: Any, *args: Any, **kwargs: Any) -> None:
        del parallelizer._apply_fsdp_sharding  # nested calls (per-model overrides recurse) are the framework's
        plan = _plan(module, context, additions, mesh_context)
        shard = partial(parallelizer._fully_shard_module, mesh=mesh, mp_policy=mp_policy,
                        offload_policy=args[0] if args else kwargs.get("offload_policy"))
        ignored = kwargs.get("ignored_multimodal_params")
        with _placed_apart(module, plan, additions.config, shard, ignored):
            framework_sharding(module, mesh, mp_policy, *args, **kwargs)
        apply_uniformity_check(module, plan)
        apply_dummy_forward(module, plan)
        additions.applied.append(plan)

    parallelizer._apply_fsdp_sharding = apply_fsdp_sharding
    try:
        yield
    finally:
        vars(parallelizer).pop("_apply_fsdp_sharding", None)


def _plan(module: Any, context: RunContext, additions: Additions, mesh_context: Any) -> MultimodalFsdpPlan:
    resolved = resolve_multimodal_modules(module, override_specs=context.override_specs)
    present = {r.spec.modality for r in resolved}
    unknown = sorted(set(additions.config.modalities) - present)
    if unknown:
        raise DistributedConfigError(
            f"{', '.join(f'{CONFIG_KEY}.{m}' for m in unknown)}: the model has no such modality; "
            f"its resolved modalities are {', '.join(sorted(present)) or 'none'}", source=context.source)
    tp, cp = getattr(mesh_context, "tp_size", 1) or 1, getattr(mesh_context, "cp_size", 1) or 1
    world = mesh_context.device_mesh.size() if getattr(mesh_context, "device_mesh", None) is not None else 1
    mesh = build_mesh_description(dp=max(world // (tp * cp), 1), tp=tp, cp=cp)
    try:
        return plan_multimodal_fsdp(module, resolved, config=additions.config, contract=additions.contract, mesh=mesh)
    except DistributedConfigError as error:
        raise DistributedConfigError(error.message, source=context.source, key=error.key) from error


@contextmanager
def _placed_apart(
    model: Any, plan: MultimodalFsdpPlan, config: MultimodalDistributedConfig, shard: Callable[..., Any],
    ignored: set | None,
) -> Iterator[None]:
    """Place the frozen modules whose modality overrides `frozen_sharding`, and hide them from the
    framework's recursion (an empty module stands in) until it returns."""
    import torch.nn as nn
    from nemo_automodel.components.distributed.multimodal_fsdp import shard_multimodal_module

    placed = [m for m in plan.modules
              if not m.trainable and config.policy_for(m.modality).frozen_sharding is not None and m.path]
    hidden = []
    for placement in placed:
        parent_path, _, name = placement.path.rpartition(".")
        parent = model.get_submodule(parent_path)
        if isinstance(parent, (nn.ModuleList, nn.ModuleDict)):
            raise IntegrationError(f"{placement.path} sits in a layer container; its frozen_sharding override "
                                   "cannot be applied apart from the framework's layer sharding", key=CONFIG_KEY)
        module = parent.get_submodule(name)
        if placement.placement == "per_layer":
            shard_multimodal_module(module, lambda unit: shard(unit, reshard_after_forward=True))
        elif placement.placement == "replicate":
            if ignored is None:
                raise IntegrationError("the framework's FSDP hook passed no ignored-parameter set; "
                                       f"{placement.path} cannot be replicated", key=CONFIG_KEY)
            ignored.update(module.parameters())
        setattr(parent, name, nn.Module())
        hidden.append((parent, name, module))
        logger.info("mmfreeze: %s (%s, frozen) placed %s by distributed.multimodal.%s.frozen_sharding",
                    placement.path, placement.modality, placement.placement, placement.modality)
    try:
        yield
    finally:
        for parent, name, module in reversed(hidden):
            setattr(parent, name, module)
