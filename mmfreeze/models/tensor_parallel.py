"""Which dim tensor parallelism splits each parameter on, read from the framework's own plan.

nemo-automodel 0.7.0 picks a model's plan with ``_get_parallel_plan`` (``components/distributed/
parallelizer.py``: a recipe's ``tp_shard_plan``, an optimised plan for the class, the model's own
Hugging Face ``_tp_plan``, or a default), then applies it with torch's ``parallelize_module``. Both are
followed here on the model built on the meta device, without a device mesh:

- a plan key is matched as ``parallelize_module`` matches it, one dotted token at a time against each
  module's ``named_children`` with ``fnmatch``; ``""`` is the model itself;
- a style places the parameters of the module it matches as torch's own classes do
  (``torch/distributed/tensor/parallel/style.py``): ``ColwiseParallel`` splits a Linear's weight and bias on
  dim 0 and an Embedding's weight on dim 1; ``RowwiseParallel`` a Linear's weight on dim 1 (its bias stays
  whole) and an Embedding's weight on dim 0; ``SequenceParallel`` keeps every parameter whole, and the
  ``PrepareModule*`` styles hold none. A subclass counts as its base where it overrides none of the base's
  partition methods (the framework's ``VocabParallelEmbedding``, ``RotaryEmbedParallel`` and
  ``SequenceParallelAllGatherActivation`` change only how inputs and outputs are laid out). The framework
  applies each exact torch style as its LoRA variant (``translate_to_lora``), which places a Linear's own
  parameters as torch does and its LoRA adapters too: ``ColwiseParallelLora`` on dim 0, ``RowwiseParallelLora``
  ``lora_A`` and ``lora_B`` on dim 1. The framework's ``ReplicatedWithGradAllReduce`` (Gemma3's q/k norms)
  keeps parameters whole: it only marks their gradients to be summed over the tensor-parallel ranks. Any
  other style is refused, naming it;
- a tied tensor the plan splits under one of its names alone is refused: the other module would hold a
  DTensor beside plain inputs, and a stock run of such a model stops in its first forward.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import TYPE_CHECKING, Any

from mmfreeze.boundary.hook_points import TP_LOCAL_STYLE, TP_LORA_STYLES, TP_MESH_CHECK, TP_PLAN_FUNCTION
from mmfreeze.boundary.names import PARALLEL_STYLES, PARALLELIZER, framework_attribute
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.loader import LoadedStructure, build_requested_model

if TYPE_CHECKING:  # torch is imported only where a plan is read: `explain` without tp_size never pays for it
    from torch import nn

    from mmfreeze.models.structure import ModelStructure

LORA_MATRICES = ("lora_A.weight", "lora_B.weight")
PARTITION_METHODS = ("_apply", "_partition_linear_fn", "_partition_embedding_fn", "_replicate_module_fn")


@dataclass(frozen=True)
class _MeshOfSize:
    """What :data:`TP_MESH_CHECK` reads of a tensor-parallel mesh: its size."""

    tp_size: int

    def size(self) -> int:
        return self.tp_size


class TensorParallelPlanError(MmfreezeError):
    """The framework's tensor-parallel plan for a model cannot be read here, or places a parameter in a way
    mmfreeze does not follow."""


_PLANS: dict[tuple[str, frozenset[str], bool, int], dict[str, int]] = {}
"""Each model's split, read once per process: a diff's cost sizes one recipe several times."""


def plan_dims(loaded: LoadedStructure, *, adapters: frozenset[str], sequence_parallel: bool, tp_size: int,
              source: str) -> dict[str, int]:
    """Canonical parameter name -> the dim the framework's plan splits it on, for the model ``loaded``
    describes, built again on the meta device (the plan reads the live model), with its LoRA ``adapters``
    (their names; the framework injects them before it parallelizes); a parameter left whole is absent."""
    key = (loaded.key, adapters, sequence_parallel, tp_size)
    if key not in _PLANS:
        model = build_requested_model(loaded.request, loaded.source)
        plan = framework_plan(model, sequence_parallel=sequence_parallel, tp_size=tp_size, source=source)
        _PLANS[key] = tensor_parallel_dims(model, loaded.structure, plan, adapters=adapters, source=source)
    return _PLANS[key]


def framework_plan(model: nn.Module, *, sequence_parallel: bool, tp_size: int, source: str) -> Mapping[str, Any]:
    """The plan the framework's parallelizer applies to ``model`` (module key -> style), after its own check
    of the model's attention heads against ``tp_size``."""
    try:
        choose = framework_attribute(PARALLELIZER, TP_PLAN_FUNCTION)
        check = framework_attribute(PARALLELIZER, TP_MESH_CHECK)
    except (ImportError, AttributeError) as error:
        raise TensorParallelPlanError(
            f"is above 1, and the framework's tensor-parallel plan ({PARALLELIZER}.{TP_PLAN_FUNCTION}) cannot be "
            f"read here ({type(error).__name__}: {error}); size it where nemo-automodel is installed with all its "
            "dependencies", source=source, key="distributed.tp_size") from error
    try:
        check(model, _MeshOfSize(tp_size))
    except ValueError as error:
        raise TensorParallelPlanError(f"is {tp_size}, which the framework refuses for {type(model).__name__}: {error}",
                                      source=source, key="distributed.tp_size") from error
    return choose(model, sequence_parallel=sequence_parallel, tp_size=tp_size)


def tensor_parallel_dims(model: nn.Module, structure: ModelStructure, plan: Mapping[str, Any], *,
                         adapters: Collection[str] = (), source: str) -> dict[str, int]:
    """Canonical parameter name -> the dim ``plan`` splits it on, applied to ``model`` (built on meta,
    ``structure`` its structure) as ``parallelize_module`` applies it, ``adapters`` (LoRA parameter names, which
    ``model`` lacks) included; a parameter it leaves whole is absent."""
    canonical = {alias: info.name for info in structure.parameters for alias in info.names}
    by_module: dict[str, list[str]] = {}
    for adapter in adapters:
        path, _, name = adapter.rpartition(".lora_")
        by_module.setdefault(path, []).append(f"lora_{name}")
    dims: dict[str, int | None] = {}
    placed: dict[str, set[str]] = {}
    for key, style in plan.items():
        rule = _rule(style, key=key, source=source)  # once per entry: a layer pattern matches every layer
        for path, module in _matched(model, key):
            for name, dim in _placements(rule, module, by_module.get(path, ()), key=key, source=source):
                name = f"{path}.{name}" if path else name
                parameter = canonical.get(name, name)
                if dims.setdefault(parameter, dim) != dim:
                    raise TensorParallelPlanError(
                        f"the framework's plan splits {parameter} on dim {dims[parameter]} and on dim {dim} (its "
                        f"entry {key!r}): not sized", source=source, key="distributed.tp_size")
                placed.setdefault(parameter, set()).add(name)
    names = {info.name: set(info.names) for info in structure.parameters}
    for parameter, under in placed.items():
        if dims[parameter] is not None and (unplaced := names.get(parameter, under) - under):
            raise TensorParallelPlanError(
                f"the framework's plan splits {sorted(under)[0]} but not the same tensor as {sorted(unplaced)[0]} (tied "
                "weights), whose module then holds a DTensor beside plain inputs: a stock tp_size 2 run of such a "
                "model (LLaVA with tied embeddings, whose plan splits lm_head alone) stops in its first forward here "
                "('aten.mm.default got mixed torch.Tensor and DTensor'): not sized", source=source,
                key="distributed.tp_size")
    return {name: dim for name, dim in dims.items() if dim is not None}


def _matched(module: nn.Module, key: str, prefix: str = "") -> Iterator[tuple[str, nn.Module]]:
    """The modules ``parallelize_module`` applies ``key``'s style to, with their paths."""
    if key == "":
        yield prefix, module
        return
    token, _, rest = key.partition(".")
    for name, child in module.named_children():
        if fnmatch(name, token):
            path = f"{prefix}.{name}" if prefix else name
            if rest:
                yield from _matched(child, rest, path)
            else:
                yield path, child


@dataclass(frozen=True)
class _Rule:
    """How a plan entry's style places parameters: ``kind`` is ``colwise``, ``rowwise``, ``whole`` (every
    parameter kept whole) or ``none`` (the style holds no parameter); ``translated``: the framework applies
    its LoRA variant, which places LoRA adapters too; ``style``: the torch class it counts as."""

    kind: str
    translated: bool
    style: str


def _rule(style: Any, *, key: str, source: str) -> _Rule:
    """``style``'s placements, or a refusal naming it."""
    from torch.distributed.tensor.parallel import (
        ColwiseParallel, PrepareModuleInput, PrepareModuleInputOutput, PrepareModuleOutput, RowwiseParallel,
        SequenceParallel)

    if type(style) is framework_attribute(PARALLEL_STYLES, TP_LOCAL_STYLE):  # marks the gradients' reduction alone
        return _Rule(kind="whole", translated=False, style=TP_LOCAL_STYLE)
    torch_styles = {kind.__name__: kind for kind in (ColwiseParallel, RowwiseParallel, SequenceParallel)}
    lora_variants = {framework_attribute(PARALLEL_STYLES, lora): torch_styles[kind] for lora, kind in TP_LORA_STYLES.items()}
    base = lora_variants.get(type(style)) or next(
        (kind for kind in (ColwiseParallel, RowwiseParallel, SequenceParallel, PrepareModuleInput,
                           PrepareModuleOutput, PrepareModuleInputOutput) if isinstance(style, kind)), None)
    if base is None or (type(style) not in lora_variants and any(
            getattr(type(style), method, None) is not getattr(base, method, None) for method in PARTITION_METHODS)):
        raise TensorParallelPlanError(
            f"the framework's plan applies {type(style).__module__}.{type(style).__qualname__} to {key!r}, a style "
            "whose placements mmfreeze does not follow: not sized", source=source, key="distributed.tp_size")
    # What the framework applies: an exact torch style becomes its LoRA variant (translate_to_lora, which swaps
    # the class of the plan's own objects, so a plan read after a run in this process may hold the variant).
    translated = type(style) in (*torch_styles.values(), *lora_variants)
    kind = {ColwiseParallel: "colwise", RowwiseParallel: "rowwise", SequenceParallel: "whole"}.get(base, "none")
    return _Rule(kind=kind, translated=translated, style=base.__name__)


def _placements(rule: _Rule, module: nn.Module, adapters: Collection[str], *, key: str,
                source: str) -> Iterator[tuple[str, int | None]]:
    """Each parameter of ``module`` (recursively, as the styles iterate them), its LoRA ``adapters``
    (``lora_A.weight``, ...) included, and the dim ``rule`` splits it on (``None``: whole)."""
    from torch import nn

    if rule.kind == "none":
        return
    parameters = [name for name, _ in module.named_parameters()]
    if rule.kind == "whole":
        yield from ((name, None) for name in parameters)
        return
    colwise = rule.kind == "colwise"
    if isinstance(module, nn.Linear):
        yield from ((name, 0 if colwise else (1 if name == "weight" else None)) for name in parameters)
        # ColwiseParallelLora splits every parameter of the module on dim 0, adapters included;
        # RowwiseParallelLora splits lora_A and lora_B on dim 1 and keeps the rest of its adapters whole.
        # A subclass style, which the framework does not translate, keeps torch's own rule.
        yield from ((name, 0 if colwise else (1 if rule.translated and name in LORA_MATRICES else None))
                    for name in adapters)
    elif adapters:
        raise TensorParallelPlanError(f"the framework's plan splits {key!r}, a {type(module).__name__} with LoRA "
                                      "adapters, which mmfreeze does not follow: not sized", source=source, key="peft")
    elif isinstance(module, nn.Embedding):
        yield from ((name, 1 if colwise else 0) for name in parameters)
    else:
        raise TensorParallelPlanError(
            f"the framework's plan applies {rule.style} to {key!r}, which matches a {type(module).__name__}, "
            "neither a Linear nor an Embedding: torch refuses it", source=source, key="distributed.tp_size")
