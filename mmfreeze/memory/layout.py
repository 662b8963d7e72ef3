"""Which FSDP2 unit owns each parameter, as nemo-automodel 0.7.0's dense FSDP2 path wraps a model.

The rules, read from ``components/distributed/parallelizer.py`` (``ModelParallelizer._apply``,
``apply_fsdp2_sharding_recursively``) and ``components/distributed/multimodal_fsdp.py``:

1. From the root down: at a ``ModuleList`` (or ``ModuleDict``; a subclass too: the framework asks
   ``isinstance``), nested containers are visited first,
   then every other child becomes one unit (``fully_shard(child)``), not visited further.
2. At any other module, each child is visited, except a child whose attribute name is one of
   ``MULTIMODAL_MODULE_NAMES`` and whose parameters are all frozen: under `frozen_sharding`
   ``root`` it is left to the root unit, under ``replicate`` its parameters are ignored by FSDP
   (plain tensors, whole on every rank); under ``per_layer`` it is visited like any module.
3. Untied, trainable input and output embeddings that no unit owns yet get their own units.
4. The root is the last unit: every parameter not owned by an earlier unit and not replicated.

A unit is ``gathered`` where the framework wraps it with ``reshard_after_forward=False``: the root,
the last unit of each container (the rest reshard, so the next layer's all-gather can be
prefetched) and the output embedding. Its parameters stay all-gathered from its forward until its
backward reshards them; a model that only runs forward (a distillation teacher) keeps them so.

A unit owns the parameters of its subtree that no earlier (inner) unit owns. Pure: it reads the
module tree of a :class:`~mmfreeze.models.structure.ModelStructure` and a frozen set.

Above ``ep_size`` 1, 0.7.0 shards every model with its MoE parallelizer instead
(``components/moe/parallelizer.py``, ``apply_fsdp``; :func:`plan_moe_layout`): each decoder block of
the text model, its ``MoE`` layer's experts left out (an FSDP2 unit of their own over the
``ep_shard`` ranks where there are more than one, else none: expert parallelism owns them), the
untied input and output embeddings, each multimodal module that trains (under ``per_layer`` each
frozen one's layers), the text model, then the root. Every unit stays gathered after its forward
(``reshard_after_forward`` False, its default).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mmfreeze.boundary.names import MOE_LAYER
from mmfreeze.models.structure import ModelStructure, ParameterInfo

FrozenSharding = Literal["root", "per_layer", "replicate"]

MULTIMODAL_MODULE_NAMES = frozenset({
    "visual", "vision", "vision_tower", "vision_model", "vit_model", "image_encoder", "vision_encoder",
    "audio_tower", "audio_encoder", "audio_model",
    "embed_vision", "embed_audio", "mm_projector", "aligner", "multi_modal_projector", "multimodal_projector",
    "vision_projector", "vit_large_projector", "audio_projector",
})
"""0.7.0's ``MULTIMODAL_TOWER_NAMES + MULTIMODAL_PROJECTOR_NAMES``: attribute names, not paths."""
TEXT_MODULE_ATTRS = ("language_model", "text_model", "text_decoder")
"""0.7.0's ``get_text_module``: where a model nests its text model."""


@dataclass(frozen=True, kw_only=True)
class FsdpUnit:
    """One ``fully_shard`` call and the parameters it owns (canonical names)."""

    path: str
    """The wrapped module's path (``""``: the root)."""
    parameters: tuple[str, ...]
    gathered: bool = False
    """Wrapped with ``reshard_after_forward=False``: all-gathered from its forward to its backward."""


@dataclass(frozen=True, kw_only=True)
class FsdpLayout:
    """Every FSDP2 unit in the order the framework applies them (root last), and the parameters it replicates."""

    units: tuple[FsdpUnit, ...]
    replicated: frozenset[str]
    """Parameters of fully frozen multimodal modules under `frozen_sharding: replicate`: not sharded."""


def plan_fsdp_layout(structure: ModelStructure, frozen: frozenset[str], frozen_sharding: FrozenSharding) -> FsdpLayout:
    """The framework's FSDP2 units for ``structure`` with ``frozen`` parameters frozen."""
    tree = _Tree(structure, frozen)
    wrapped: list[str] = []
    gathered: set[str] = {""}
    replicated: set[str] = set()
    tree.visit("", frozen_sharding, wrapped, gathered, replicated)
    embeddings = tree.untied_embeddings(wrapped)
    wrapped += embeddings
    gathered.update(path for path in embeddings if path.rpartition(".")[2] == "lm_head")
    owned: set[str] = set(replicated)
    units = []
    for path in [*wrapped, ""]:
        names = tuple(name for name in tree.parameters_under(path) if name not in owned)
        owned.update(names)
        units.append(FsdpUnit(path=path, parameters=names, gathered=path in gathered))
    return FsdpLayout(units=tuple(units), replicated=frozenset(replicated))


@dataclass(frozen=True, kw_only=True)
class MoeModel:
    """Where 0.7.0's MoE parallelizer finds a model's parts (``apply_ep``, ``apply_fsdp``)."""

    text: str
    """The text model (``get_text_module`` of ``model.model``, else of the model)."""
    blocks: tuple[str, ...]
    """Its decoder blocks (``layers``), then a multi-token-prediction head's (``mtp.layers``)."""
    experts: tuple[str, ...]
    """The ``experts`` module of each block's ``MoE`` layer."""
    expert_parameters: frozenset[str]
    """Their own parameters (``named_parameters(recurse=False)``): what expert parallelism splits."""


def moe_model(structure: ModelStructure) -> MoeModel:
    """The text model, its blocks and their experts, as the MoE parallelizer walks them."""
    modules = structure.modules
    outer = "model" if "model" in modules else ""
    text = next((f"{outer}.{name}".lstrip(".") for name in TEXT_MODULE_ATTRS if f"{outer}.{name}".lstrip(".") in modules),
                outer)
    tree = _Tree(structure, frozenset())
    blocks = [*tree.children.get(f"{text}.layers".lstrip("."), []), *tree.children.get("mtp.layers", [])]
    experts = [f"{block}.{layer}.experts" for block in blocks for layer in ("moe", "mlp")
               if modules.get(f"{block}.{layer}") == MOE_LAYER and f"{block}.{layer}.experts" in modules]
    owned = {f"{path}." for path in experts}
    names = frozenset(info.name for info in structure.parameters
                      if any(info.name.startswith(prefix) and "." not in info.name[len(prefix):] for prefix in owned))
    return MoeModel(text=text, blocks=tuple(blocks), experts=tuple(experts), expert_parameters=names)


def plan_moe_layout(structure: ModelStructure, frozen: frozenset[str], frozen_sharding: FrozenSharding,
                    moe: MoeModel, *, experts_sharded: bool) -> FsdpLayout:
    """The MoE parallelizer's FSDP2 units for ``structure`` (its parts: ``moe``) with ``frozen`` frozen;
    ``experts_sharded``: the ``ep_shard`` mesh has more than one rank, so each block's experts are a unit
    of their own."""
    tree = _Tree(structure, frozen)
    experts_of = {path.rsplit(".", 2)[0]: path for path in moe.experts}
    wrapped: list[str] = []
    for block in moe.blocks:
        if experts_sharded and block in experts_of:
            wrapped.append(experts_of[block])
        wrapped.append(block)
    embed, lm_head = (_child(structure, moe.text, "embed_tokens"),
                      _child(structure, moe.text, "lm_head") or _child(structure, "", "lm_head"))
    tied = bool(embed and lm_head) and _tied(structure, embed, lm_head)
    wrapped += [path for path in (None if tied else embed, _child(structure, moe.text, "embed_norm"),
                                  None if tied else lm_head) if path]
    replicated: set[str] = set()
    for path in _multimodal_modules(structure):
        if not tree.fully_frozen(path):
            wrapped.append(path)
        elif frozen_sharding == "per_layer":
            wrapped += tree.layers_of(path) or [path]
        elif frozen_sharding == "replicate":
            replicated.update(tree.parameters_under(path))
    if moe.text and not (tied and lm_head and not lm_head.startswith(f"{moe.text}.")):
        wrapped.append(moe.text)
    owned = set(replicated) | (set() if experts_sharded else set(moe.expert_parameters))
    units = []
    for path in [*wrapped, ""]:
        names = tuple(name for name in tree.parameters_under(path) if name not in owned)
        owned.update(names)
        units.append(FsdpUnit(path=path, parameters=names, gathered=True))
    return FsdpLayout(units=tuple(units), replicated=frozenset(replicated))


def _child(structure: ModelStructure, parent: str, name: str) -> str | None:
    path = f"{parent}.{name}".lstrip(".")
    return path if path in structure.modules and path not in structure.module_aliases else None


def _multimodal_modules(structure: ModelStructure) -> list[str]:
    """0.7.0's ``iter_multimodal_modules``: the outermost modules named as a tower or projector, in module order."""
    found: list[str] = []
    for path in structure.modules:
        if path and path not in structure.module_aliases and path.rpartition(".")[2] in MULTIMODAL_MODULE_NAMES \
                and not any(path.startswith(f"{taken}.") for taken in found):
            found.append(path)
    return found


class _Tree:
    """The module tree of a structure: children, parameters under a path, trainability."""

    def __init__(self, structure: ModelStructure, frozen: frozenset[str]) -> None:
        self.structure = structure
        self.frozen = frozen
        self.children: dict[str, list[str]] = {}
        for path in structure.modules:
            if path and path not in structure.module_aliases:
                parent = path.rpartition(".")[0]
                self.children.setdefault(parent, []).append(path)

    def kind(self, path: str) -> str:
        """``ModuleList``, ``ModuleDict`` or ``""``: what the framework's ``isinstance`` sees."""
        return self.structure.containers.get(path, "")

    def parameters_under(self, path: str) -> list[str]:
        return [info.name for info in self.structure.parameters if _under(info, path)]

    def fully_frozen(self, path: str) -> bool:
        names = self.parameters_under(path)
        return bool(names) and all(name in self.frozen for name in names)

    def visit(self, path: str, sharding: FrozenSharding, wrapped: list[str], gathered: set[str],
              replicated: set[str]) -> None:
        kind = self.kind(path)
        children = self.children.get(path, [])
        if kind:
            nested = ("ModuleList", "ModuleDict") if kind == "ModuleDict" else ("ModuleList",)
            for child in children:
                if self.kind(child) in nested:
                    self.visit(child, sharding, wrapped, gathered, replicated)
            layers = [child for child in children if self.kind(child) not in nested]
            wrapped += layers
            gathered.update(layers[-1:])
            return
        for child in children:
            leaf = child.rpartition(".")[2]
            if leaf in MULTIMODAL_MODULE_NAMES and sharding != "per_layer" and self.fully_frozen(child):
                if sharding == "replicate":
                    replicated.update(self.parameters_under(child))
                continue
            self.visit(child, sharding, wrapped, gathered, replicated)

    def layers_of(self, path: str) -> list[str]:
        """0.7.0's ``_shard_layer_containers_recursively``: the items of every layer container below ``path``."""
        found: list[str] = []
        for child in self.children.get(path, []):
            if self.kind(child):
                for item in self.children.get(child, []):
                    found += self.layers_of(item) if self.kind(item) else [item]
            else:
                found += self.layers_of(child)
        return found

    def untied_embeddings(self, wrapped: Iterable[str]) -> list[str]:
        """Rule 3: the input and output embedding modules, when untied, trainable and not units yet."""
        found = [path for path in (_embedding(self.structure, "embed_tokens"), _embedding(self.structure, "lm_head")) if path]
        if len(found) < 2 or _tied(self.structure, *found):
            return []
        taken = set(wrapped)
        return [path for path in found if path not in taken
                and any(name not in self.frozen for name in self.parameters_under(path))]


def _under(info: ParameterInfo, path: str) -> bool:
    return not path or any(name.startswith(path + ".") for name in info.names)


def _embedding(structure: ModelStructure, leaf: str) -> str | None:
    """The one module named ``leaf``: ``embed_tokens`` for ``get_input_embeddings()``, ``lm_head``
    for ``get_output_embeddings()``."""
    found = [path for path in structure.modules
             if path.rpartition(".")[2] == leaf and path not in structure.module_aliases]
    return found[0] if len(found) == 1 else None


def _tied(structure: ModelStructure, first: str, second: str) -> bool:
    by_name = structure.parameters_by_name
    weight = by_name.get(f"{first}.weight")
    return weight is not None and weight is by_name.get(f"{second}.weight")
