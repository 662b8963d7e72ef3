"""Report labels for a snapshot's structure: resolved module first, prefix for the rest, no log noise."""

from __future__ import annotations

import logging

from mmfreeze.models.structure import ModelStructure, ParameterInfo
from mmfreeze.snapshots.grouping import grouper


def _structure(class_name: str) -> ModelStructure:
    modules = {"": class_name, "vision_tower": "Encoder", "language_model": "Decoder", "extra": "Linear"}
    names = ("vision_tower.w", "language_model.layers.0.w", "extra.w")
    return ModelStructure(class_name=class_name, modules=modules, module_aliases={},
                          parameters=tuple(ParameterInfo(name=n, shape=(2,), requires_grad=True) for n in names))


def test_a_guessed_inventory_labels_the_report_without_logging_the_guess(caplog) -> None:
    """heuristic class | grouper -> resolved labels, and the heuristic's warning is left to `explain`."""
    with caplog.at_level(logging.WARNING, logger="mmfreeze.resolver.heuristic"):
        group_of = grouper(_structure("GroupingOnlyVLM"))
    assert not caplog.records
    assert group_of("vision_tower.w") == "vision_tower (vision tower)"
    assert group_of("language_model.layers.0.w") == "language model: language_model.layers"
    assert group_of("extra.w") == "extra"


def test_no_structure_labels_by_prefix() -> None:
    assert grouper(None)("model.layers.3.mlp.w") == "model.layers"
