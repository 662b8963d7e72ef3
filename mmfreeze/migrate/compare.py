"""Parameter-level differences grouped by the module a reviewer recognises, with counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from mmfreeze.freeze.targets import canonical_by_raw
from mmfreeze.resolver import ResolvedInventory


def group_parameters(raw_names: Iterable[str], inventory: ResolvedInventory) -> dict[str, int]:
    """Group label -> parameter count; a label is the resolved owner (``vision.projector model.x``),
    ``language_model``, or else the parameter's parent module."""
    owner = _owner_labels(inventory)
    canonical = canonical_by_raw(inventory)
    counts = Counter(
        owner.get(canonical.get(raw, raw)) or canonical.get(raw, raw).rpartition(".")[0] or "(root)" for raw in raw_names
    )
    return dict(sorted(counts.items()))


def _owner_labels(inventory: ResolvedInventory) -> dict[str, str]:
    labels = {name: "language_model" for name in inventory.language_model.parameters}
    for info in inventory.modules:
        label = f"{info.spec.modality}.{info.spec.role or '-'} {info.spec.path}"
        labels.update((name, label) for name in info.parameters)
    return labels
