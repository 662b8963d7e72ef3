"""Group labels for canonical names, given exactly as the snapshot reports give them.

The reports label a structure's names with :func:`mmfreeze.snapshots.grouping.grouper`: resolved
module first (``model.visual (vision tower)``, ``language model: model.layers``), name prefix for
the rest. A snapshot's structure is unwrapped; a live model's names carry wrapper segments
(``_orig_mod``, ``_checkpoint_wrapped_module``, PEFT's ``base_model.model`` and ``base_layer``).
So the live structure is first restated under its canonical names
(:func:`mmfreeze.resolver.canonical.canonicalize`), for the reports' own grouper to run on.
Only a failing check pays for this.
"""

from __future__ import annotations

from dataclasses import replace

from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.canonical import canonicalize


def canonical_structure(structure: ModelStructure) -> ModelStructure:
    """``structure`` with canonical module paths and parameter names (shapes and flags kept)."""
    canonical = canonicalize(structure)
    raw = structure.parameters_by_name
    return ModelStructure(
        class_name=canonical.class_name,
        modules=dict(canonical.modules),
        module_aliases={path: first for path, first in canonical.identity.items() if path != first},
        parameters=tuple(replace(raw[parameter.raw_name], name=parameter.name, aliases=parameter.aliases)
                         for parameter in canonical.parameters),
    )
