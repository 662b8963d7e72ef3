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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mmfreeze.models.structure import ModelStructure, ParameterInfo

FrozenSharding = Literal["root", "per_layer", "replicate"]

MULTIMODAL_MODULE_NAMES = frozenset({
    "visual", "vision", "vision_tower", "vision_model", "vit_model", "image_encoder", "vision_encoder",
    "audio_tower", "audio_encoder", "audio_model",
    "embed_vision", "embed_audio", "mm_projector", "aligner", "multi_modal_projector", "multimodal_projector",
    "vision_projector", "vit_large_projector", "audio_projector",
})
"""0.7.0's ``MULTIMODAL_TOWER_NAMES + MULTIMODAL_PROJECTOR_NAMES``: attribute names, not paths."""


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
