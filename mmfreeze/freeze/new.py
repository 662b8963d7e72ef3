"""The new `freeze_config` engine: (modality, role) flags, the whole language model, selectors, exceptions.

It acts through the resolver's ownership, so ``vision.tower`` and ``vision.projector`` are
disjoint sets even when the projector lives inside the tower. What it freezes is the union of the
flags and `modules` selectors minus what `except` selects; nothing else is frozen, and nothing is
ever unfrozen: ``false`` means "do not freeze", and an exception only narrows this section's own
freezes (what was frozen before it runs, or what the invariants freeze after it, stays frozen).
The section is parsed and checked in one place, :mod:`mmfreeze.freeze.config`.
"""

from __future__ import annotations

from typing import Any

from mmfreeze.freeze.config import FreezeConfig, check_against_model, parse_freeze_config
from mmfreeze.freeze.plan import FreezePlan, plan_from_matches
from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.resolve import resolve_structure


def plan_new_freeze(
    structure: ModelStructure,
    section: FreezeConfig | Any,
    *,
    source: str | None = None,
    inventory: ResolvedInventory | None = None,
) -> FreezePlan:
    """Validate ``section`` against the model and plan what it freezes (raw parameter names).

    ``structure`` is the model as the section finds it (after PEFT): its frozen parameters are
    what an exception cannot make trainable, together with the framework's invariant freezes."""
    config = section if isinstance(section, FreezeConfig) else parse_freeze_config(section, source=source)
    inventory = inventory if inventory is not None else resolve_structure(structure)
    selection = check_against_model(config, FreezeTargets(structure=structure, inventory=inventory), source=source)
    kept = selection.kept_trainable
    return plan_from_matches(
        (name, selected.rule) for selected in selection.freezes for name in sorted(selected.names) if name not in kept
    )
