"""A recipe's memory inputs as nemo-automodel 0.7.0 runs it: dtypes, optimizer, FSDP2 layout, world size.

Reads the document as the framework reads the file (``Recipe.framework_document``) and the trained
structure and frozen set mmfreeze already computed (:func:`mmfreeze.freeze.recipe_model.recipe_frozen_set`);
re-derives neither. Every layout it does not model is refused, naming the key.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from math import prod
from typing import TYPE_CHECKING, Any, Literal

from mmfreeze.boundary.names import PACKAGE_PREFIX
from mmfreeze.memory.dtypes import parse_dtype
from mmfreeze.memory.errors import MemoryModelError, UndividableLayoutError, UnknownDtypeError
from mmfreeze.memory.layout import FrozenSharding, FsdpLayout, moe_model, plan_fsdp_layout, plan_moe_layout
from mmfreeze.memory.model import ExpertParallel, MemoryEstimate, MemoryInputs, estimate_memory
from mmfreeze.memory.optimizer import OptimizerState, optimizer_state
from mmfreeze.models.framework import framework_class_for
from mmfreeze.models.tensor_parallel import plan_dims
from mmfreeze.recipes.recipe import TEACHER, teacher_key

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.models.loader import LoadedStructure
    from mmfreeze.models.structure import ModelStructure
    from mmfreeze.recipes.recipe import Recipe

FROM_CONFIG_DEFAULT_DTYPE = "bfloat16"
"""``_BaseNeMoAutoModelClass.from_config``: ``torch_dtype="auto"`` means bfloat16 (``_transformers/auto_model.py``)."""
COMPUTE_DTYPE = "bfloat16"
"""``FSDP2Config``'s default ``MixedPrecisionPolicy.param_dtype``. After sharding, ``apply_model_infrastructure``
(``_transformers/infrastructure.py``) calls ``cast_frozen_modules_to_compute_dtype``
(``components/models/common/utils.py``): every frozen parameter that is a plain tensor, not a DTensor (the
ones `frozen_sharding: replicate` keeps out of FSDP), is cast to it in place; the ones a model pins in fp32
(``_keep_in_fp32_modules``, ``_keep_in_fp32_modules_strict``) keep their loaded dtype (:func:`stored_dtypes`)."""
FRAMEWORK_FP32_HOLDER = "_fp32_params"
"""Where the framework's own classes (Qwen3.5, Qwen3-Next, ...) hold parameters they keep in fp32
whatever the model's dtype (``cast_model_to_dtype(..., skip_modules=("_fp32_params",))``)."""
UNMODELLED_SIZES = ("pp_size", "dp_replicate_size")
"""Distributed sizes above 1 change the layout in ways this model does not cover (PP, HSDP)."""
CONTEXT_PARALLEL_CLASSES = ("nemo_automodel.components.models.qwen3_vl.",)
"""The framework's own classes sized under context parallelism, each measured on a real run: dense Qwen3-VL, whose
parallelizer runs the shared path and then hands its model-owned attention the ``cp`` mesh. Transformers classes
run the shared path and the framework's generic SDPA context parallelism; the framework's other classes are refused."""
FSDP2_STRATEGIES = ("fsdp2",)
FSDP2_MANAGER = "nemo_automodel.components.distributed.fsdp2.FSDP2Manager"


@dataclass(frozen=True, kw_only=True)
class Teacher:
    """A distillation recipe's teacher as the framework builds it (:meth:`mmfreeze.workspace.Workspace.teacher`):
    its recipe (:func:`~mmfreeze.recipes.recipe.teacher_recipe`), what it freezes when the framework shards
    it, and its model as this run built it."""

    recipe: Recipe
    frozen: FrozenSetResult
    loaded: LoadedStructure


TEACHER_PLACES = {
    "separate_meshes": "the teacher runs on ranks of its own (teacher_distributed), which the memory model does "
                       "not lay out: not sized",
    "offload_teacher_model": "the teacher is held in host memory, not on the ranks: not sized",
}
"""Keys of a distillation recipe that put the teacher elsewhere than beside the student (``recipes/vlm/kd.py``)."""


def recipe_memory(recipe: Recipe, frozen: FrozenSetResult, *, world_size: int,
                  frozen_names: frozenset[str] | None = None, loaded: LoadedStructure | None = None,
                  teacher: Teacher | None = None, delta_only: bool = False) -> MemoryEstimate:
    """Per-rank memory of ``recipe`` (its frozen set ``frozen``) at ``world_size`` ranks;
    ``frozen_names``: another trainable set on the same structure (what a diff compares); ``loaded``: the
    model as this run built it, with its config and builder, which say whether the framework trains another
    class (:func:`check_framework_class`); ``teacher``: a distillation recipe's teacher, whose parameters share
    the ranks; ``delta_only``: the caller compares two figures of this recipe, so a teacher, the same in
    both, is left out."""
    if loaded is not None:
        check_framework_class(loaded, source=recipe.display_path)
    return estimate_memory(memory_inputs(recipe, frozen, world_size=world_size, frozen_names=frozen_names,
                                         loaded=loaded, teacher=teacher, delta_only=delta_only))


def memory_inputs(recipe: Recipe, frozen: FrozenSetResult, *, world_size: int,
                  frozen_names: frozenset[str] | None = None, loaded: LoadedStructure | None = None,
                  teacher: Teacher | None = None, delta_only: bool = False) -> MemoryInputs:
    optimizer = optimizer_state(recipe.framework_document, source=recipe.display_path)
    names = frozen.frozen if frozen_names is None else frozen_names
    inputs = _model_inputs(recipe, frozen, world_size=world_size, frozen=names, optimizer=optimizer, loaded=loaded)
    check_uniform_trainable_dtypes(inputs.layout, inputs.dtypes, names, source=recipe.display_path)
    return replace(inputs, teacher=None if delta_only else _teacher_inputs(recipe, teacher, world_size=world_size,
                                                                           optimizer=optimizer))


def _model_inputs(recipe: Recipe, built: FrozenSetResult, *, world_size: int, frozen: frozenset[str],
                  optimizer: OptimizerState, loaded: LoadedStructure | None = None) -> MemoryInputs:
    """One model's inputs: its FSDP2 layout with ``frozen`` frozen when the framework shards it, its
    tensor-parallel split where ``tp_size`` is above 1 (read from ``loaded``, the model this run built), and
    dtypes."""
    document = recipe.framework_document
    source = recipe.display_path
    distributed = _distributed(document, source)
    check_world_size(distributed, world_size, source=source)
    structure = built.structure
    check_shared_parallelizer(structure, source=source)
    check_one_model(structure, source=source)
    base = model_dtype(document, recipe.model.target, source=source)
    adapter = _lora_dtype(document, source) or base
    check_context_parallel(structure, distributed, source=source)
    experts = expert_parallel(structure, distributed, world_size, source=source)
    sharding = frozen_sharding(distributed, source)
    layout = plan_fsdp_layout(structure, frozen, sharding) if experts is None else \
        plan_moe_layout(structure, frozen, sharding, experts.model, experts_sharded=experts.shard > 1)
    dtypes = stored_dtypes(structure, base=base, adapter=adapter, adapters=built.adapters or frozenset(),
                           replicated=layout.replicated, target=recipe.model.target, source=source)
    tp = degree(distributed, "tp_size")
    return MemoryInputs(structure=structure, frozen=frozen, dtypes=dtypes, layout=layout, optimizer=optimizer,
                        world_size=world_size, tp_size=tp, expert_parallel=experts,
                        tp_dims=_tp_dims(document, distributed, loaded, adapters=built.adapters or frozenset(), tp=tp,
                                         source=source) if tp > 1 else {})


def expert_parallel(structure: ModelStructure, distributed: Mapping[str, Any], world_size: int, *,
                    source: str) -> ExpertParallel | None:
    """Where ``ep_size`` is above 1: how 0.7.0's MoE parallelizer splits the experts of the framework's own MoE
    layers (``apply_ep``) over the ``ep_shard x ep`` mesh (``mesh_utils``: ``ep_shard`` is the world over
    ``ep_size``); refused with tensor parallelism or for a model without such layers: no run measured them."""
    ep = degree(distributed, "ep_size")
    if ep == 1:
        return None
    key = "distributed.ep_size"
    if (tp := degree(distributed, "tp_size")) > 1:
        raise UndividableLayoutError(f"is {ep} beside tp_size {tp}: expert parallelism is sized with "
                                     "data-parallel FSDP2 alone (no run measured both)", source=source, key=key)
    if world_size % ep:
        raise UndividableLayoutError(f"is {ep}, which does not divide the world size ({world_size}): the framework "
                                     "refuses it", source=source, key=key)
    if not structure.class_module.startswith(PACKAGE_PREFIX):
        # validate_for_mesh (_transformers/capabilities.py) at build: not a MoEFSDPSyncMixin (measured)
        raise UndividableLayoutError(f"is {ep}, but the framework trains transformers' {structure.class_name} here, "
                                     "not one of its own MoE classes, and refuses expert parallelism for it when it "
                                     "builds the model (\"requires a MoE model\"); set ep_size 1", source=source,
                                     key=key)
    moe = moe_model(structure)
    if not moe.experts:
        raise UndividableLayoutError(f"is {ep}, but mmfreeze finds no MoE layer of the framework's in "
                                     f"{structure.class_name}'s blocks under {moe.text or 'the model'}.layers, where "
                                     "its MoE parallelizer looks for the experts it splits (blocks a model reaches "
                                     "through a property are not followed): not sized", source=source, key=key)
    shapes = {name: structure.parameters_by_name[name].shape for name in sorted(moe.expert_parameters)}
    if uneven := [name for name, shape in shapes.items() if shape[0] % ep]:
        raise UndividableLayoutError(f"is {ep}, which does not divide the experts of {uneven[0]} "
                                     f"({shapes[uneven[0]][0]}): the framework refuses it", source=source, key=key)
    shard = world_size // ep
    if odd := [name for name, shape in shapes.items() if len(shape) > 1 and shape[1] % shard]:
        # torch 2.14's FSDPParam: "FSDP does not support uneven sharding on dim 1" (measured)
        raise UndividableLayoutError(f"is {ep}: at {world_size} ranks FSDP2 shards each expert slice over {shard} ranks "
                                     f"on its dim 1, and {odd[0]} has {shapes[odd[0]][1]} rows there: FSDP2 refuses an "
                                     "uneven split on any dim but 0", source=source, key=key)
    return ExpertParallel(size=ep, shard=shard, model=moe)


def check_context_parallel(structure: ModelStructure, distributed: Mapping[str, Any], *, source: str) -> None:
    """Where ``cp_size`` is above 1, FSDP2 shards over the flattened ``dp_shard x cp`` mesh
    (``get_fsdp_dp_mesh``), whose rank is the data-parallel rank the layout already uses (``tp`` innermost): the
    figures are those of ``cp_size`` 1. Refused beside expert parallelism and on the framework's own classes but
    :data:`CONTEXT_PARALLEL_CLASSES`: no run measured them."""
    cp = degree(distributed, "cp_size")
    if cp == 1:
        return
    key = "distributed.cp_size"
    if (ep := degree(distributed, "ep_size")) > 1:
        raise UndividableLayoutError(f"is {cp} beside ep_size {ep}: context parallelism is sized without expert "
                                     "parallelism (no run measured both)", source=source, key=key)
    module = structure.class_module
    if module.startswith(PACKAGE_PREFIX) and not module.startswith(CONTEXT_PARALLEL_CLASSES):
        raise UndividableLayoutError(f"is {cp} on the framework's own {structure.class_name}, whose context-parallel "
                                     "layout no run measured: not sized", source=source, key=key)


def degree(distributed: Mapping[str, Any], key: str) -> int:
    """`distributed.<key>` (``tp_size``, ``ep_size``), 1 where it is not a positive integer (``null``: the
    framework's default)."""
    return distributed[key] if _positive(distributed.get(key)) else 1


def _tp_dims(document: Mapping[str, Any], distributed: Mapping[str, Any], loaded: LoadedStructure | None, *,
             adapters: frozenset[str], tp: int, source: str) -> Mapping[str, int]:
    """Where ``tp_size`` is above 1: the dim the framework's plan splits each parameter on, for the
    transformers class the framework's builder built (another release's class would get another plan: 5.25's
    VLMs fall back to the framework's default plan, whose paths match almost nothing; a framework class under
    tensor parallelism, and a recipe's own ``tp_plan``, are refused: no run measured them)."""
    if distributed.get("tp_plan") is not None:
        raise UndividableLayoutError("a tensor-parallel plan of the recipe's own: the memory model reads the "
                                     "framework's choice, not sized", source=source, key="distributed.tp_plan")
    if loaded is None:
        raise MemoryModelError("the framework's tensor-parallel plan is read from the model this run built, and "
                               "none was given: not sized", source=source, key="distributed.tp_size")
    if loaded.request.build.kind != "framework":
        raise UndividableLayoutError("is sized where the framework's builder builds (nemo-automodel installed with the "
                                     "transformers release it pins): the framework picks a class's tensor-parallel plan "
                                     "from that release's class, and this environment builds another release's",
                                     source=source, key="distributed.tp_size")
    if loaded.structure.class_module.startswith(PACKAGE_PREFIX):
        raise UndividableLayoutError(f"the framework's own {loaded.structure.class_name} under tensor parallelism: no "
                                     "run measured, not sized", source=source, key="distributed.tp_size")
    return plan_dims(loaded, adapters=adapters, sequence_parallel=bool(distributed.get("sequence_parallel")), tp_size=tp,
                     source=source)


def _teacher_inputs(recipe: Recipe, teacher: Teacher | None, *, world_size: int,
                    optimizer: OptimizerState) -> MemoryInputs | None:
    """A distillation recipe's teacher, on the student's ranks and mesh: laid out with what its
    `teacher_freeze_config` freezes when the framework shards it, then frozen whole (``kd.py``'s
    ``_build_teacher_model``), so it holds parameters only. Its errors name the teacher's keys."""
    document, source = recipe.framework_document, recipe.display_path
    if TEACHER not in document:
        return None
    for key, why in TEACHER_PLACES.items():
        if document.get(key):
            raise MemoryModelError(why, source=source, key=key)
    distributed = _distributed(document, source)
    if degree(distributed, "ep_size") > 1:
        raise MemoryModelError("expert parallelism beside a distillation teacher (both through the MoE parallelizer): "
                               "no run measured it, not sized", source=source, key="distributed.ep_size")
    if degree(distributed, "cp_size") > 1:
        raise MemoryModelError("context parallelism beside a distillation teacher: no run measured it, not sized",
                               source=source, key="distributed.cp_size")
    if teacher is None:
        raise MemoryModelError("the teacher's parameters share the ranks, and its model was not built here: "
                               "not sized", source=source, key=TEACHER)
    if distributed.get("reshard_after_forward") is not None:
        raise MemoryModelError("sets which units the teacher keeps all-gathered after its forward, which the memory "
                               "model does not follow: not sized", source=source,
                               key="distributed.reshard_after_forward")
    try:
        check_framework_class(teacher.loaded, source=source)
        sharded = _model_inputs(teacher.recipe, teacher.frozen, world_size=world_size, frozen=teacher.frozen.frozen,
                                optimizer=optimizer, loaded=teacher.loaded)
    except MemoryModelError as error:
        raise type(error)(error.message, source=error.source, key=teacher_key(error.key)) from error
    return replace(sharded, frozen=frozenset(info.name for info in sharded.structure.parameters), forward_only=True)


def stored_dtypes(
    structure: ModelStructure, *, base: str, adapter: str, adapters: Collection[str], replicated: Collection[str],
    target: str, source: str,
) -> dict[str, str]:
    """Each parameter's dtype as the framework leaves it: the recipe's (``base``); an adapter's
    (``adapter``); loaded ``from_pretrained`` in bfloat16 or float16, a model's
    ``_keep_in_fp32_modules_strict`` in fp32 (transformers keeps them so; ``from_config`` builds every
    tensor in the recipe's dtype); replicated, the compute dtype (``cast_frozen_modules_to_compute_dtype``),
    but under either of the model's fp32 patterns its loaded one. A pattern holds a parameter where it is
    part of its name, as the framework matches them. Refused where that is not known here: a float16
    recipe with ``_keep_in_fp32_modules`` patterns (transformers keeps those in fp32 in float16 alone; not
    measured), another loader than ``from_pretrained`` or ``from_config`` with either kind, the
    framework's own fp32 holders (:data:`FRAMEWORK_FP32_HOLDER`)."""
    strict, loose = structure.keep_in_fp32_strict, structure.keep_in_fp32

    def held(name: str, patterns: Collection[str]) -> bool:
        return any(pattern in name for pattern in patterns)

    kept = [info.name for info in structure.parameters if held(info.name, (FRAMEWORK_FP32_HOLDER, *strict, *loose))]
    pretrained = target.endswith(".from_pretrained")
    if kept and (any(held(name, (FRAMEWORK_FP32_HOLDER,)) for name in kept)
                 or (base == "float16" and any(held(name, loose) for name in kept))
                 or not (pretrained or target.endswith(".from_config"))):
        raise UnknownDtypeError(
            f"{structure.class_name} keeps {kept[0]} (and {len(kept) - 1} more) in fp32 by name, and how it is "
            f"stored in a {base} recipe loaded by {target.rpartition('.')[2] or target} is not modelled: not sized",
            source=source, key="model.torch_dtype")

    def loaded(name: str) -> str:
        return "float32" if pretrained and base in ("bfloat16", "float16") and held(name, strict) else base

    def stored(name: str) -> str:
        if name in adapters:
            return adapter
        if name in replicated and not held(name, (*strict, *loose)):
            return COMPUTE_DTYPE
        return loaded(name)

    return {info.name: stored(info.name) for info in structure.parameters}


def check_uniform_trainable_dtypes(layout: FsdpLayout, dtypes: Mapping[str, str], frozen: Collection[str], *,
                                   source: str) -> None:
    """FSDP2 refuses a unit whose trainable parameters have more than one dtype (its gradients are
    reduce-scattered into one buffer): so does the memory model, naming two of them."""
    for unit in layout.units:
        trainable = {dtypes[name]: name for name in unit.parameters if name not in frozen}
        if len(trainable) > 1:
            (first, one), (second, other) = sorted(trainable.items())[:2]
            raise UnknownDtypeError(
                f"the FSDP2 unit {unit.path or '(root)'} would train {one} in {first} and {other} in {second}: FSDP2 "
                "refuses mixed dtypes among a unit's trainable parameters; freeze one or set one dtype",
                source=source, key="model.torch_dtype")


def check_framework_class(loaded: LoadedStructure, *, source: str) -> None:
    """Refuse a structure the framework would not train: its own class for the architecture where this
    environment built the transformers one (another tree, maybe another layout), or any class of
    :data:`OWN_PARALLELIZERS`. What the framework's builder built is what trains (its own resolver picked
    the class, by config where that decides), as is the transformers class of a recipe with ``model.force_hf``
    and a composite, which its ``_target_`` names (:func:`check_one_model` refuses it)."""
    framework = framework_class_for(loaded.source.config)
    build, structure = loaded.request.build, loaded.structure
    if framework is None or build.force_hf or (build.kind == "framework" and not structure.build_note) \
            or structure.parts:
        return
    modules = [module for module, _ in framework.classes]
    if any(f"{module}.".startswith(OWN_PARALLELIZERS) for module in modules):
        raise MemoryModelError(f"the framework builds {framework.describe()} for {framework.architecture}, sharded by "
                               "its own parallelizer, whose FSDP2 layout mmfreeze does not model", source=source,
                               key="model")
    if structure.class_module not in modules:  # a config-dependent choice included: which one is not known here
        verb = "may build" if framework.config_dependent else "builds"
        raise MemoryModelError(f"the framework {verb} {framework.describe()} for {framework.architecture}, but this "
                               f"environment built {structure.class_name} ({structure.class_module}); size it where "
                               "the framework's class builds (nemo-automodel installed with its transformers)",
                               source=source, key="model")


def check_shared_parallelizer(structure: ModelStructure, *, source: str) -> None:
    """Refuse a framework class that brings its own parallelizer (:data:`OWN_PARALLELIZERS`)."""
    if structure.class_module.startswith(OWN_PARALLELIZERS):
        raise MemoryModelError(f"the framework shards {structure.class_name} ({structure.class_module}) with its own "
                               "parallelizer, whose FSDP2 layout mmfreeze does not model", source=source, key="model")


def check_one_model(structure: ModelStructure, *, source: str) -> None:
    """Refuse a composite (``Gemma4WithDrafter``: a model and its drafter built as one module): no run of
    one was measured, so its FSDP2 units are not known."""
    if structure.parts:
        parts = ", ".join(f"{part.prefix} ({part.class_name})" for part in structure.parts)
        raise MemoryModelError(f"builds {structure.class_name}, a composite of {parts}, whose FSDP2 layout no "
                               "measured run shows: not sized", source=source, key="model._target_")


def model_dtype(document: Mapping[str, Any], target: str, *, source: str) -> str:
    """The dtype the framework loads the model in: `model.dtype` (wins) or `model.torch_dtype`;
    ``auto`` (the default) is bfloat16 for ``from_config``, the checkpoint's own dtypes for
    ``from_pretrained``, which mmfreeze does not read: refused."""
    model = document.get("model") if isinstance(document.get("model"), Mapping) else {}
    key = "model.dtype" if model.get("dtype") is not None else "model.torch_dtype"
    value = model.get("dtype") if model.get("dtype") is not None else model.get("torch_dtype", "auto")
    if value == "auto":
        if target.endswith(".from_config"):
            return FROM_CONFIG_DEFAULT_DTYPE
        raise UnknownDtypeError("is auto (the default): each tensor keeps the checkpoint's dtype, which mmfreeze "
                                "does not read; state it (e.g. torch.bfloat16)", source=source, key=key)
    return parse_dtype(value, source=source, key=key)


def _lora_dtype(document: Mapping[str, Any], source: str) -> str | None:
    peft = document.get("peft")
    if not isinstance(peft, Mapping) or peft.get("lora_dtype") is None:
        return None
    return parse_dtype(peft["lora_dtype"], source=source, key="peft.lora_dtype")


def _distributed(document: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    section = document.get("distributed")
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise MemoryModelError(f"must be a mapping, got {section!r}", source=source, key="distributed")
    strategy = section.get("strategy", "fsdp2")
    target = section.get("_target_")
    if strategy not in FSDP2_STRATEGIES or (target is not None and target != FSDP2_MANAGER):
        raise UndividableLayoutError(f"mmfreeze models FSDP2 only, not {target or strategy!r}", source=source,
                                     key="distributed._target_" if target is not None else "distributed.strategy")
    return section


OWN_PARALLELIZERS = tuple(f"nemo_automodel.components.models.{package}." for package in (
    "bagel", "deepseek_v4", "deepseek_v41", "diffusion_gemma", "nemotron_v3", "qwen3_5"))
"""The framework's model classes that carry their own ``parallelizer`` sidecar (``Cls.parallelizer = PARALLELIZER``
in 0.7.0's ``components/models/<package>/model.py``), overriding ``_apply``, ``_apply_fsdp_sharding`` or
``_fully_shard_module``: their FSDP2 units may not be the shared path's, so they are refused. Not three whose
``_apply`` runs the shared one unchanged at ``tp_size`` 1, each measured on a real run
(``tests/nemo/test_memory_exact.py``): dense Qwen3-VL's and MuseGlimmer's then set ``cp_mesh`` attributes (Qwen3-VL's
measured at ``cp_size`` 2 too; :func:`check_context_parallel` refuses the others there), and Gemma4's adds its
tensor-parallel plan only above ``tp_size`` 1."""
WORLD_FACTORS = ("tp_size", "cp_size", "pp_size")
"""With ``dp_size``, the factors of the world size (``components/distributed/mesh_utils.py``: the mesh is
``pp x dp_replicate x dp_shard x cp x tp`` with ``dp_size = dp_replicate x dp_shard``; experts are carved
out of ``dp x cp x tp``, so ``ep_size`` is not a factor)."""


def recipe_world_size(document: Mapping[str, Any]) -> int | None:
    """The world size the recipe's distributed sizes state (``dp_size x tp_size x cp_size x pp_size``),
    or ``None`` when ``dp_size`` is not an integer (the framework then infers it from the launch)."""
    section = document.get("distributed")
    if not isinstance(section, Mapping) or not _positive(section.get("dp_size")):
        return None
    world = section["dp_size"]
    for key in WORLD_FACTORS:
        world *= section.get(key) if _positive(section.get(key)) else 1
    return world


def check_world_size(distributed: Mapping[str, Any], world_size: int, *, source: str) -> None:
    """Refuse a world size the recipe's distributed sizes do not divide, and the sizes not modelled."""
    if not isinstance(world_size, int) or world_size < 1:
        raise UndividableLayoutError(f"must be a positive number of ranks, got {world_size!r}", key="world_size")
    if world_size == 1:
        raise UndividableLayoutError("is 1: on one rank the framework skips FSDP2 and casts frozen and mixed "
                                     "subtrees to the compute dtype, a layout mmfreeze does not model; size 2 or more "
                                     "ranks", source=source, key="world_size")
    if "mp_policy" in distributed:
        raise UndividableLayoutError("a mixed-precision policy other than the framework's default (bf16 compute, fp32 "
                                     "reduce) is not modelled", source=source, key="distributed.mp_policy")
    for key in UNMODELLED_SIZES:
        value = distributed.get(key)
        if _positive(value) and value > 1:
            raise UndividableLayoutError(f"is {value}: mmfreeze models data-parallel FSDP2 with tensor, context and "
                                         "expert parallelism alone (every other size 1)", source=source,
                                         key=f"distributed.{key}")
    split = {key: size for key in ("tp_size", "cp_size") if (size := degree(distributed, key)) > 1}
    model_parallel = prod(split.values())
    if world_size % model_parallel:
        sizes = " x ".join(f"distributed.{key} ({size})" for key, size in split.items())
        raise UndividableLayoutError(f"is {world_size}, which {sizes} does not divide", source=source, key="world_size")
    dp = distributed.get("dp_size")
    if _positive(dp) and dp * model_parallel != world_size:
        over = "".join(f" over {key} {size}" for key, size in split.items())
        raise UndividableLayoutError(f"is {dp}, but the world size is {world_size}{over}: the data-parallel group "
                                     "would not cover every rank", source=source, key="distributed.dp_size")


def frozen_sharding(distributed: Mapping[str, Any], source: str) -> FrozenSharding:
    """0.7.0's `distributed.multimodal.frozen_sharding` (default ``root``); per-modality overrides
    need mmfreeze's integration and are not modelled."""
    multimodal = distributed.get("multimodal") or {}
    if not isinstance(multimodal, Mapping):
        raise MemoryModelError(f"must be a mapping, got {multimodal!r}", source=source, key="distributed.multimodal")
    for modality, policy in multimodal.items():
        if isinstance(policy, Mapping) and "frozen_sharding" in policy:
            raise UndividableLayoutError("a per-modality frozen_sharding runs through mmfreeze's integration, whose "
                                         "layout the memory model does not cover", source=source,
                                         key=f"distributed.multimodal.{modality}.frozen_sharding")
    value = multimodal.get("frozen_sharding", "root")
    normalized = value.lower().replace("-", "_") if isinstance(value, str) else value
    if normalized not in ("root", "per_layer", "replicate"):
        raise MemoryModelError(f"must be one of root, per_layer, replicate, got {value!r}", source=source,
                               key="distributed.multimodal.frozen_sharding")
    return normalized


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True, kw_only=True)
class WorldSize:
    """The world size memory is sized for, and where it came from."""

    ranks: int
    source: Literal["--world-size", "[tool.mmfreeze] world_size", "the recipe's distributed sizes"]


def choose_world_size(recipe: Recipe, *, option: int | None, setting: int | None) -> WorldSize | None:
    """``--world-size``, else the setting, else the recipe's sizes; ``None`` when none states it."""
    if option is not None:
        return WorldSize(ranks=option, source="--world-size")
    if setting is not None:
        return WorldSize(ranks=setting, source="[tool.mmfreeze] world_size")
    stated = recipe_world_size(recipe.framework_document)
    return WorldSize(ranks=stated, source="the recipe's distributed sizes") if stated is not None else None
