"""What a new-vocabulary `freeze_config` can name on one model, as sets of parameter names (pure).

A section addresses a model through the resolver: (modality, role) groups, the language model,
canonical module paths (exact or by glob) and layer stacks. This module answers the look-ups the
parser's model checks (:func:`mmfreeze.freeze.config.check_against_model`) and the planner need;
it raises nothing. Names in every set are the structure's (raw) parameter names, so a plan built
from them applies to the model as given.

A layer stack is one of the resolver's layer lists (``inventory.layer_containers``: numbered
children whose classes say layer or block). It is named after what holds it: ``language_model``,
``<modality>.<role>`` for the resolved module around it (``vision.tower``), or ``<modality>`` when
that module has no role. Its depth is the number of numbered children the model really has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from mmfreeze.freeze.invariants import invariant_freezes
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.inventory import LANGUAGE_GROUP, ResolvedInventory
from mmfreeze.resolver.canonical import canonical_by_raw
from mmfreeze.resolver.paths import is_under, name_prefixes

LANGUAGE_MODEL_KEY = "language_model"
FROZEN_BEFORE = "frozen before the section runs (built frozen, or by the PEFT baseline)"


@dataclass(frozen=True, kw_only=True)
class LayerStack:
    """One numbered list of transformer layers, as a section names it."""

    group: str
    """``language_model``, ``<modality>.<role>`` or ``<modality>``: what holds the stack."""
    path: str
    """Canonical path of the list (``model.visual.blocks``)."""
    indices: tuple[int, ...]
    """The layer numbers the model has, ascending."""

    @property
    def depth(self) -> int:
        return len(self.indices)

    def describe(self) -> str:
        return f"{self.group} ({self.path}, {self.depth} layers)"


def group_key(modality: str, role: str | None) -> str:
    """How a section names a (modality, role) group: ``vision.tower``; ``vision`` when there is no role."""
    return f"{modality}.{role}" if role else modality


def roles_by_modality(inventory: ResolvedInventory) -> dict[str, list[str]]:
    """The (modality, role) pairs a `freeze_config` may name for this model, in resolver order.

    A modality whose modules all have ``role=None`` is listed with no roles: it exists, but only
    `modules:` can address it."""
    roles: dict[str, list[str]] = {}
    for info in inventory.modules:
        found = roles.setdefault(info.spec.modality, [])
        if info.spec.role is not None and info.spec.role not in found:
            found.append(info.spec.role)
    return roles


@dataclass(frozen=True)
class FreezeTargets:
    """One model seen by the new vocabulary: ``structure`` is the trained one (after PEFT)."""

    structure: ModelStructure
    inventory: ResolvedInventory

    @cached_property
    def roles(self) -> dict[str, list[str]]:
        return roles_by_modality(self.inventory)

    def role_names(self, modality: str, role: str) -> frozenset[str]:
        """Parameters owned by the modules of ``(modality, role)`` (resolver ownership: disjoint)."""
        owned = (info.parameters for info in self.inventory.modules
                 if info.spec.modality == modality and info.spec.role == role)
        return self._raw(name for names in owned for name in names)

    @cached_property
    def language_model(self) -> frozenset[str]:
        """Decoder, token embeddings, final norm and lm_head (the language model's parts)."""
        return self._raw(self.inventory.language_model.parameters)

    @cached_property
    def all_names(self) -> frozenset[str]:
        return frozenset(info.name for info in self.structure.parameters)

    @cached_property
    def module_paths(self) -> tuple[str, ...]:
        """Canonical module paths, aliases included, root excluded: what a glob is matched against."""
        return tuple(path for path in self.inventory.raw_module_paths if path)

    @cached_property
    def subtree(self) -> Mapping[str, frozenset[str]]:
        """Every canonical module path or parameter name -> the parameters at or below it."""
        under: dict[str, set[str]] = {}
        for name, raw in self.inventory.raw_parameter_names.items():
            for prefix in name_prefixes(name):
                under.setdefault(prefix, set()).add(raw)
        return {path: frozenset(names) for path, names in under.items()}

    @cached_property
    def canonical_names(self) -> Mapping[str, str]:
        """Raw parameter name -> its canonical name."""
        return canonical_by_raw(self.inventory.raw_parameter_names)

    def names_under(self, paths: Iterable[str]) -> frozenset[str]:
        return frozenset(name for path in paths for name in self.subtree.get(path, ()))

    @cached_property
    def layer_stacks(self) -> tuple[LayerStack, ...]:
        indices = _numbered_children(self.module_paths, self.inventory.layer_containers)
        return tuple(
            LayerStack(group=self._stack_group(group, path), path=path, indices=indices[path])
            for group, paths in self.inventory.layer_containers.items() for path in paths if indices.get(path)
        )

    def stacks_named(self, name: str) -> tuple[LayerStack, ...]:
        """The stacks a `layers:` value names: a group name, or the canonical path of one stack."""
        return tuple(stack for stack in self.layer_stacks if name in (stack.group, stack.path))

    def stack_name(self, stack: LayerStack) -> str:
        """How a section names ``stack``: its group when no other stack shares it, else its path."""
        return stack.group if len(self.stacks_named(stack.group)) == 1 else stack.path

    @cached_property
    def fixed(self) -> Mapping[str, str]:
        """Parameters frozen whatever the section says -> why: frozen before it runs (built frozen,
        PEFT baseline) or by the framework's invariant freezes, which run after it."""
        fixed = {info.name: FROZEN_BEFORE for info in self.structure.parameters if not info.requires_grad}
        fixed.update(invariant_freezes(self.structure))
        return fixed

    def _stack_group(self, group: str, path: str) -> str:
        if group == LANGUAGE_GROUP:
            return LANGUAGE_MODEL_KEY
        holders = [info for info in self.inventory.modules
                   if info.spec.modality == group and is_under(path, info.spec.path)]
        holder = max(holders, key=lambda info: info.spec.path.count("."), default=None)
        return group_key(group, holder.spec.role if holder is not None else None)

    def _raw(self, names: Iterable[str]) -> frozenset[str]:
        raw = self.inventory.raw_parameter_names
        return frozenset(raw[name] for name in names)


def _numbered_children(paths: Iterable[str], containers: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[int, ...]]:
    wanted = {path for found in containers.values() for path in found}
    children: dict[str, set[int]] = {}
    for path in paths:
        parent, _, leaf = path.rpartition(".")
        if parent in wanted and leaf.isdigit():
            children.setdefault(parent, set()).add(int(leaf))
    return {parent: tuple(sorted(found)) for parent, found in children.items()}
