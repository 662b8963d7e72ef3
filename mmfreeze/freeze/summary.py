"""Frozen / trainable counts per resolved module and for the language model (pure)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from mmfreeze.freeze.targets import LANGUAGE_MODEL_KEY, group_key
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.inventory import ResolvedInventory

LANGUAGE_MODEL_GROUP = LANGUAGE_MODEL_KEY
UNOWNED_GROUP = "unowned"


@dataclass(frozen=True, kw_only=True)
class GroupSummary:
    """How much of one group of parameters is frozen."""

    group: str
    """``<modality>.<role>`` for a resolved module (:func:`group_key`), ``language_model`` or ``unowned``."""
    path: str | None
    tensors: int
    frozen_tensors: int
    numel: int
    frozen_numel: int

    @property
    def state(self) -> str:
        if self.frozen_tensors == 0:
            return "trainable"
        return "frozen" if self.frozen_tensors == self.tensors else "partly frozen"


def summarize_frozen(
    inventory: ResolvedInventory, structure: ModelStructure, frozen: Collection[str]
) -> tuple[GroupSummary, ...]:
    """One summary per resolved module, then the language model, then unowned parameters.

    ``frozen`` holds the structure's (raw) parameter names; the inventory's are canonical.
    """
    raw = inventory.raw_parameter_names
    groups = [
        (group_key(info.spec.modality, info.spec.role), info.spec.path, info.parameters) for info in inventory.modules
    ]
    groups.append((LANGUAGE_MODEL_GROUP, None, inventory.language_model.parameters))
    if inventory.unowned:
        groups.append((UNOWNED_GROUP, None, inventory.unowned))
    return tuple(
        _summary(group, path, [raw[name] for name in names], structure, frozen) for group, path, names in groups
    )


def _summary(
    group: str, path: str | None, names: Iterable[str], structure: ModelStructure, frozen: Collection[str]
) -> GroupSummary:
    infos = [structure.parameters_by_name[name] for name in names]
    frozen_infos = [info for info in infos if info.name in frozen]
    return GroupSummary(
        group=group,
        path=path,
        tensors=len(infos),
        frozen_tensors=len(frozen_infos),
        numel=sum(info.numel for info in infos),
        frozen_numel=sum(info.numel for info in frozen_infos),
    )
