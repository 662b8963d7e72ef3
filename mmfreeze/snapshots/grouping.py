"""Which module a parameter belongs to, for reports: the resolver's module, else a name prefix."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.structure import ModelStructure

LANGUAGE_LABEL = "language model"


def prefix_group(name: str) -> str:
    """The module path up to the first layer index: ``model.layers.3.mlp.w`` -> ``model.layers``.

    Names without an index group by their parent module (``lm_head.weight`` -> ``lm_head``).
    """
    parts = name.split(".")
    for position, part in enumerate(parts[:-1]):
        if part.isdigit():
            return ".".join(parts[:position]) or parts[0]
    return ".".join(parts[:-1]) or name


def resolved_groups(structure: ModelStructure) -> Mapping[str, str]:
    """Raw parameter name -> ``path (modality role)`` or ``language model: prefix``, for names the resolver owns.

    Empty when the resolver cannot resolve the model: reports then fall back to prefixes.
    """
    from mmfreeze.resolver import resolve_structure

    try:
        with warnings.catch_warnings():
            # A guessed (heuristic) inventory is still a fine label; the warning belongs to `explain`.
            warnings.simplefilter("ignore")
            inventory = resolve_structure(structure)
    except MmfreezeError:
        return {}
    raw = inventory.raw_parameter_names
    labels = {
        raw.get(name, name): f"{info.spec.path} ({info.spec.modality} {info.spec.role})"
        for info in inventory.modules
        for name in info.parameters
    }
    for name in inventory.language_model.parameters:
        labels[raw.get(name, name)] = f"{LANGUAGE_LABEL}: {prefix_group(raw.get(name, name))}"
    return labels


def grouper(structure: ModelStructure | None) -> Callable[[str], str]:
    """A name -> group label function: resolved module first, prefix for the rest."""
    labels = resolved_groups(structure) if structure is not None else {}
    return lambda name: labels.get(name) or prefix_group(name)
