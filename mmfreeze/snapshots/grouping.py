"""Which module a parameter belongs to, for snapshot and guard reports (labels: :mod:`mmfreeze.resolver.labels`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.labels import parameter_labeller
from mmfreeze.resolver.spec import MultimodalModuleSpec


def grouper(structure: ModelStructure | None, overrides: Sequence[MultimodalModuleSpec] = ()) -> Callable[[str], str]:
    """A name -> group label function for ``structure``'s names: resolved module first, prefix for the rest.

    ``overrides``: the recipe's `multimodal.modules` (its own names for its modules), which every
    report applies, as `explain` and `migrate` do: one module, one name.

    When the resolver cannot resolve the model, every name is labelled by its prefix. A guessed
    (heuristic) inventory is still a fine label, so its warning is left to `explain`. The model is
    resolved at the first label asked for: most reports label nothing (a recipe whose every
    trainable tensor is reached), and resolving for labels was a fifth of a cold corpus run's
    frozen-set work (measured).
    """
    from mmfreeze.resolver import resolve_structure

    @cache
    def labeller() -> Callable[[str], str]:
        try:
            inventory = (resolve_structure(structure, override_specs=overrides, warn_guess=False)
                         if structure is not None else None)
        except MmfreezeError:
            inventory = None
        return parameter_labeller(inventory)

    return lambda name: labeller()(name)
