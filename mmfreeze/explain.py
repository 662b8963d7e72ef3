"""What `mmfreeze explain` reports about one recipe, as plain data (the CLI renders it)."""

from __future__ import annotations

from typing import Any

from mmfreeze.models.loader import LoadedStructure


def explain_model(loaded: LoadedStructure) -> dict[str, Any]:
    """The model section of an explanation: which class, from which config, how large."""
    structure = loaded.structure
    return {
        "recipe": loaded.recipe.display_path,
        "model_id": loaded.recipe.model.model_id,
        "target": loaded.recipe.model.target,
        "auto_class": loaded.recipe.model.auto_class,
        "architecture": structure.class_name,
        "config_source": {
            "kind": loaded.source.kind,
            "location": loaded.source.location,
            "provenance": loaded.source.provenance,
        },
        "parameters": structure.total_numel,
        "parameter_tensors": len(structure.parameters),
        "tied_aliases": sum(len(info.aliases) for info in structure.parameters),
    }
