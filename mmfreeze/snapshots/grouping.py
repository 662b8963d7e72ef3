"""Which module a parameter belongs to, for snapshot and guard reports (labels: :mod:`mmfreeze.resolver.labels`)."""

from __future__ import annotations

from collections.abc import Callable

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.labels import parameter_labeller


def grouper(structure: ModelStructure | None) -> Callable[[str], str]:
    """A name -> group label function for ``structure``'s names: resolved module first, prefix for the rest.

    When the resolver cannot resolve the model, every name is labelled by its prefix. A guessed
    (heuristic) inventory is still a fine label, so its warning is left to `explain`.
    """
    from mmfreeze.resolver import resolve_structure

    try:
        inventory = resolve_structure(structure, warn_guess=False) if structure is not None else None
    except MmfreezeError:
        inventory = None
    return parameter_labeller(inventory)
