"""Setup validation: resolved modules + live requires_grad + batch contract + mesh -> a plan.

Pure: reads the module tree and ``requires_grad`` (any device, meta included) and never touches
``torch.distributed``, so `mmfreeze explain` can show the plan offline. Either every policy is
safe and a :class:`MultimodalFsdpPlan` comes back, or one :class:`DistributedConfigError` lists
every problem, each naming the module, the key and the fix.

The rules (PROPOSAL.md sections 2-3):

- a trainable, conditionally executed module whose execution may differ across ranks needs the
  dummy forward: FSDP collectives (its own unit's, or the root's reduce-scatter when it lives in
  the root) only line up when every rank traverses it;
- a frozen conditionally executed module must not get `per_layer` units unless its execution is
  rank-uniform (batch contract or dummy forward);
- `validate_rank_uniform_execution: always` turns any asymmetric microbatch into an error before
  the towers run, so it is accepted as a safety source; a bounded check is diagnostic only;
- frame sharding splits a modality's frames over `cp` (ranks may get no frames, so its execution
  counts as rank-asymmetric), supports `mesh_dims: [cp]` only, and conflicts with `per_layer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from mmfreeze.distributed.batch_contract import BatchContract
from mmfreeze.distributed.config import (
    CONFIG_KEY,
    DummyForwardSetting,
    MultimodalDistributedConfig,
    UniformityCheck,
)
from mmfreeze.distributed.dummy_forward import get_dummy_forward
from mmfreeze.distributed.mesh import MeshDescription
from mmfreeze.exceptions import DistributedConfigError
from mmfreeze.models.structure import structure_of
from mmfreeze.resolver.canonical import CanonicalStructure, canonicalize
from mmfreeze.resolver.ownership import numbered_layer_lists
from mmfreeze.resolver.paths import is_under, is_under_any

if TYPE_CHECKING:
    from torch import nn

    from mmfreeze.resolver.spec import ResolvedMultimodalModule

Placement = Literal["own_units", "root", "per_layer", "replicate"]
SUPPORTED_FRAME_MESH_DIMS = ("cp",)


@dataclass(frozen=True, kw_only=True)
class FsdpUnit:
    """One ``fully_shard`` call, in application order."""

    path: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class ModulePlacement:
    """Where one resolved module's parameters live under FSDP, and why."""

    path: str
    modality: str
    role: str | None
    conditionally_executed: bool
    trainable: bool
    """Any parameter requires grad, read live after freezing and PEFT."""
    placement: Placement
    """`own_units` (trainable: normal layer sharding), or the frozen strategy applied."""


@dataclass(frozen=True, kw_only=True)
class DummyForwardDecision:
    """Whether a modality's dummy forward runs on ranks that skip it, and why."""

    modality: str
    setting: DummyForwardSetting
    required: bool
    enabled: bool
    reason: str


@dataclass(frozen=True, kw_only=True)
class MultimodalFsdpPlan:
    """An accepted distributed policy for one model, ready for ``apply_*``."""

    mesh: MeshDescription
    units: tuple[FsdpUnit, ...]
    """``fully_shard`` calls, submodules first, the root (path ``""``) last."""
    modules: tuple[ModulePlacement, ...]
    dummy_forward: tuple[DummyForwardDecision, ...]
    uniformity_check: UniformityCheck
    notes: tuple[str, ...] = ()

    @property
    def replicated(self) -> tuple[str, ...]:
        return tuple(m.path for m in self.modules if m.placement == "replicate")

    @property
    def root_owned(self) -> tuple[str, ...]:
        return tuple(m.path for m in self.modules if m.placement == "root")

    @property
    def dummy_modalities(self) -> frozenset[str]:
        return frozenset(d.modality for d in self.dummy_forward if d.enabled)

    def describe(self) -> dict[str, Any]:
        """A pure-data summary for `mmfreeze explain` (JSON-serialisable)."""
        return {
            "verdict": "accepted",
            "mesh": self.mesh.describe(),
            "fsdp_units": [{"path": u.path or "<root>", "reason": u.reason} for u in self.units],
            "root_owned": list(self.root_owned),
            "replicated": list(self.replicated),
            "modules": [vars(m) for m in self.modules],
            "dummy_forward": {d.modality: {k: v for k, v in vars(d).items() if k != "modality"} for d in self.dummy_forward},
            "validate_rank_uniform_execution": self.uniformity_check,
            "notes": list(self.notes),
        }


def plan_multimodal_fsdp(
    model: nn.Module,
    resolved: Sequence[ResolvedMultimodalModule],
    *,
    config: MultimodalDistributedConfig,
    contract: BatchContract,
    mesh: MeshDescription,
) -> MultimodalFsdpPlan:
    """Validate the policy for ``model`` and return its FSDP / dummy-forward plan.

    ``resolved`` must be bound after freezing and PEFT: ``requires_grad`` is read now.
    """
    context = _Context(model=model, config=config, contract=contract, mesh=mesh)
    trainable = {r.spec.path: any(p.requires_grad for p in r.module.parameters()) for r in resolved}
    modalities = sorted({r.spec.modality for r in resolved})
    decisions = tuple(
        _decide_dummy(context, m, [r for r in resolved if r.spec.modality == m], trainable) for m in modalities
    )
    enabled = {d.modality for d in decisions if d.enabled}
    placements = tuple(_place(context, r, trainable[r.spec.path], enabled) for r in resolved)
    for modality in modalities:
        _check_frame_sharding(context, modality, placements)
    if context.problems:
        raise DistributedConfigError(
            "unsafe or unsupported policy:\n  - " + "\n  - ".join(context.problems), key=CONFIG_KEY
        )
    return MultimodalFsdpPlan(
        mesh=mesh,
        units=_units(model, placements),
        modules=placements,
        dummy_forward=decisions,
        uniformity_check=config.validate_rank_uniform_execution,
        notes=tuple(context.notes),
    )


@dataclass
class _Context:
    model: nn.Module
    config: MultimodalDistributedConfig
    contract: BatchContract
    mesh: MeshDescription

    def __post_init__(self) -> None:
        self.problems: list[str] = []
        self.notes: list[str] = []

    @property
    def always_checked(self) -> bool:
        return self.config.validate_rank_uniform_execution == "always"

    def may_differ(self, modality: str) -> bool:
        """Execution of ``modality`` may differ across ranks: by contract, or by frame sharding."""
        frames = self.config.policy_for(modality).frame_sharding.enabled
        return self.contract.may_differ_across_ranks(modality) or frames


def _decide_dummy(
    context: _Context, modality: str, modules: list[ResolvedMultimodalModule], trainable: dict[str, bool]
) -> DummyForwardDecision:
    setting = context.config.policy_for(modality).run_dummy_forward
    key = f"{CONFIG_KEY}.{modality}.run_dummy_forward"
    at_risk = [r.spec.path for r in modules if trainable[r.spec.path] and r.spec.conditionally_executed]
    required = bool(at_risk) and context.may_differ(modality)
    implementation = get_dummy_forward(context.model)
    capable = implementation is not None and modality in implementation.modalities
    model_name = type(context.model).__name__
    if setting is True and not capable:
        context.problems.append(
            f"{key}: true, but {model_name} has no dummy forward for {modality!r}; implement "
            "`mmfreeze_dummy_forward` on the model (or add its class to DUMMY_FORWARD_TABLE)"
        )
    if not required:
        why = _not_required_reason(context, modality, at_risk)
        return DummyForwardDecision(modality=modality, setting=setting, required=False, enabled=setting is True and capable, reason=why)
    if setting is not False and capable:
        reason = f"trainable conditionally executed {', '.join(at_risk)} and {modality} execution may differ across ranks"
        return DummyForwardDecision(modality=modality, setting=setting, required=True, enabled=True, reason=reason)
    if context.always_checked:
        context.notes.append(
            f"{modality}: dummy forward needed for {', '.join(at_risk)} but off; relying on "
            "validate_rank_uniform_execution: always, so an asymmetric microbatch raises instead of hanging"
        )
    elif setting is False:
        context.problems.append(
            f"{key}: false, but {', '.join(at_risk)} is trainable, conditionally executed, and "
            f"{modality} execution may differ across ranks (batch contract: {context.contract.declared_by}); "
            f"ranks that skip it leave its FSDP collectives and gradient unmatched (hang or crash). "
            f"Fix: set {key}: auto{'' if capable else ' (after giving the model a dummy forward)'}, "
            f"declare a rank-uniform batch contract for {modality}, or freeze it"
        )
    elif setting == "auto":  # `true` without the capability was reported above
        context.problems.append(
            f"{key}: auto requires a dummy forward for {', '.join(at_risk)} (trainable, conditionally "
            f"executed, {modality} execution may differ across ranks), but {model_name} cannot run one "
            f"for {modality!r}. Fix: implement `mmfreeze_dummy_forward` on the model (or add its class to "
            f"DUMMY_FORWARD_TABLE), declare a rank-uniform batch contract for {modality}, or freeze it"
        )
    return DummyForwardDecision(modality=modality, setting=setting, required=True, enabled=False, reason="required but not available")


def _not_required_reason(context: _Context, modality: str, at_risk: list[str]) -> str:
    if not at_risk:
        return f"no trainable conditionally executed {modality} module"
    return f"batch contract guarantees rank-uniform {modality} execution ({context.contract.declared_by})"


def _place(context: _Context, resolved: ResolvedMultimodalModule, trainable: bool, dummy: set[str]) -> ModulePlacement:
    spec = resolved.spec
    placement: Placement = "own_units" if trainable else context.config.frozen_sharding_for(spec.modality)
    rank_uniform = not context.contract.may_differ_across_ranks(spec.modality) or spec.modality in dummy
    if placement == "per_layer" and spec.conditionally_executed and not rank_uniform:
        key = f"{CONFIG_KEY}.{spec.modality}.frozen_sharding"
        if context.always_checked:
            context.notes.append(f"{spec.path}: per_layer under possibly asymmetric execution, guarded by the always-on check")
        else:
            context.problems.append(
                f"{key}: per_layer gives frozen, conditionally executed {spec.path} its own FSDP units, "
                f"but {spec.modality} execution may differ across ranks (batch contract: "
                f"{context.contract.declared_by}); ranks that skip it would not enter those collectives. "
                f"Fix: frozen_sharding: root or replicate for {spec.modality}, or declare a rank-uniform "
                f"batch contract for {spec.modality}"
            )
    return ModulePlacement(
        path=spec.path,
        modality=spec.modality,
        role=spec.role,
        conditionally_executed=spec.conditionally_executed,
        trainable=trainable,
        placement=placement,
    )


def _check_frame_sharding(context: _Context, modality: str, placements: tuple[ModulePlacement, ...]) -> None:
    frames = context.config.policy_for(modality).frame_sharding
    if not frames.enabled:
        return
    key = f"{CONFIG_KEY}.{modality}.frame_sharding.mesh_dims"
    if frames.mesh_dims != SUPPORTED_FRAME_MESH_DIMS:
        context.problems.append(
            f"{key}: {list(frames.mesh_dims)} is not supported; the only supported value is [cp]"
        )
    elif not context.mesh.has("cp"):
        context.problems.append(
            f"{key}: [cp], but the device mesh has no cp dimension (dimensions: "
            f"{list(context.mesh.dim_names)}); set a context-parallel size above 1 or disable frame sharding"
        )
    for placement in placements:
        if placement.modality == modality and placement.placement == "per_layer":
            context.problems.append(
                f"{CONFIG_KEY}.{modality}: frame_sharding splits {placement.path}'s frames over cp while "
                "frozen_sharding: per_layer partitions its layers into FSDP units; use root or replicate"
            )


def _units(model: nn.Module, placements: tuple[ModulePlacement, ...]) -> tuple[FsdpUnit, ...]:
    units: list[FsdpUnit] = []
    all_paths = [p.path for p in placements]
    stacks = _LayerStacks.of(model)
    # Deepest first: fully_shard must be applied bottom-up, a nested module before its parent.
    for placement in sorted(placements, key=lambda p: -p.path.count(".")):
        if placement.placement not in ("own_units", "per_layer"):
            continue
        why = "trainable" if placement.trainable else "frozen, per_layer"
        label = f"{placement.modality} {placement.role or 'module'}"
        nested = [path for path in all_paths if is_under(path, placement.path) and path != placement.path]
        layers = stacks.layers(placement.path, exclude=nested)
        units.extend(FsdpUnit(path=layer, reason=f"{label} layer ({why})") for layer in layers)
        # A module with a layer stack is not itself a unit: its embeddings / norms stay with the
        # root. Wrapping a transformers sub-model (e.g. CLIPVisionModel) renames its class, and
        # transformers keys output capturing (`hidden_states` Llava reads) by class: it breaks.
        if not layers:
            units.append(FsdpUnit(path=placement.path, reason=f"{label} ({why})"))
    for layer in stacks.layers("", exclude=all_paths):
        units.append(FsdpUnit(path=layer, reason="language layer"))
    units.append(FsdpUnit(path="", reason="root: every parameter not in a unit above"))
    return tuple(units)


@dataclass(frozen=True)
class _LayerStacks:
    """The model's layer stacks by the resolver's rule (:func:`numbered_layer_lists`), outermost only."""

    structure: CanonicalStructure

    @classmethod
    def of(cls, model: nn.Module) -> _LayerStacks:
        return cls(canonicalize(structure_of(model)))

    def layers(self, within: str, *, exclude: list[str]) -> list[str]:
        """Raw paths of the layers of the outermost stacks under ``within`` (``""``: the whole
        model) and outside ``exclude``, in model order."""
        stacks: list[str] = []
        for path in sorted(numbered_layer_lists(self.structure)):
            if is_under(path, within) and not is_under_any(path, exclude) and not is_under_any(path, stacks):
                stacks.append(path)
        wanted = set(stacks)
        return [
            self.structure.raw_module_paths[path] for path in self.structure.modules
            if path.rpartition(".")[0] in wanted and path.rpartition(".")[2].isdigit()
            and self.structure.identity[path] == path
        ]
