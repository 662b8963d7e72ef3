"""One rank's view of a live model: canonical parameter names and their ``requires_grad`` now.

Names are the resolver's canonical ones (:func:`mmfreeze.resolver.canonical.canonicalize`): FSDP2
(DTensor parameters keep their names), activation-checkpoint, ``torch.compile`` and PEFT wrapper
segments are stripped, and each parameter object appears once, under its first name in
``named_parameters(remove_duplicate=False)`` order, as in a snapshot. Only names, flags and
shapes are read: no tensor is created, copied or gathered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.resolver.canonical import canonical_by_raw, canonicalize

if TYPE_CHECKING:
    from torch import nn


@dataclass(frozen=True, kw_only=True)
class LiveModel:
    """A live model's parameters under canonical names, read at one moment."""

    names: tuple[str, ...]
    """Canonical name of every parameter tensor, in model order."""
    frozen: frozenset[str]
    """The canonical names whose parameter has ``requires_grad=False``."""
    numel: Mapping[str, int]
    """Canonical name -> element count (the global shape's, under FSDP2)."""
    raw_names: Mapping[str, str]
    """Canonical name -> the name the live model gives it (wrapper segments included)."""
    names_by_identity: Mapping[int, str]
    """``id(parameter)`` -> canonical name, for every parameter object of the model (a parameter
    outside the user's model, such as a PEFT root's own, keeps its raw name)."""
    structure: ModelStructure
    """The raw structure, for grouping names by resolved module in a report."""

    @cached_property
    def trainable(self) -> frozenset[str]:
        return frozenset(self.names) - self.frozen


def read_live_model(model: nn.Module) -> LiveModel:
    """Read ``model`` (any device, wrapped or not) as it is now."""
    structure = structure_of(model)
    requires_grad = {info.name: info.requires_grad for info in structure.parameters}
    names: list[str] = []
    frozen: set[str] = set()
    numel: dict[str, int] = {}
    raw_names: dict[str, str] = {}
    for parameter in canonicalize(structure).parameters:
        names.append(parameter.name)
        numel[parameter.name] = parameter.numel
        raw_names[parameter.name] = parameter.raw_name
        if not requires_grad[parameter.raw_name]:
            frozen.add(parameter.name)
    return LiveModel(
        names=tuple(names), frozen=frozenset(frozen), numel=numel, raw_names=raw_names,
        names_by_identity=_names_by_identity(model, raw_names), structure=structure,
    )


def _names_by_identity(model: nn.Module, raw_names: Mapping[str, str]) -> dict[int, str]:
    canonical_of = canonical_by_raw(raw_names)
    by_identity: dict[int, str] = {}
    for raw, parameter in model.named_parameters(remove_duplicate=False):
        by_identity.setdefault(id(parameter), canonical_of.get(raw, raw))
    return by_identity
