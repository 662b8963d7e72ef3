"""What `mmfreeze explain` says about the builder: which one, why, and where it departs from the framework."""

from __future__ import annotations

from typing import Any

from mmfreeze.models.framework import BuilderChoice, builder_fields
from mmfreeze.models.loader import LoadedStructure


def explain_builder(choice: BuilderChoice, loaded: LoadedStructure, *, target: str) -> dict[str, Any]:
    """The run's builder choice and reason, and this recipe's snapshot-header values."""
    structure = loaded.structure
    header = builder_fields(structure, loaded.request, loaded.source.config, target=target)
    # A stand-in is this recipe's own builder, whatever the run chose for the others.
    reason = ("transformers has no class for this checkpoint; the framework builds its own, by `architectures`"
              if structure.built_by else choice.reason)
    return {"choice": choice.label, "reason": reason, "fallback": choice.fallback, **header}
