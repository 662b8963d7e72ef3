from __future__ import annotations

from dataclasses import replace

from mmfreeze.snapshots.diff import HeaderChange, diff_snapshots
from mmfreeze.resolver.labels import prefix_group
from tests.snapshots.test_format import HEADER, snapshot_of


def test_moved_names_are_grouped_with_counts_and_header_changes_listed() -> None:
    old = snapshot_of(HEADER, frozenset({"v.blocks.0.w", "v.blocks.1.w", "lm.w"}))
    new = snapshot_of(
        replace(HEADER, framework="nemo-automodel 0.6 (0.7 rejects freeze_config.freeze_embeddings)", frozen_tensors=2),
        frozenset({"v.blocks.0.w", "v.blocks.1.w", "proj.w"}),
    )
    change = diff_snapshots(old, new, numel_of={"proj.w": 6, "lm.w": 4}, group_of=prefix_group)
    assert change.header_changes == (
        HeaderChange(field="framework", old="nemo-automodel 0.7", new="nemo-automodel 0.6 (0.7 rejects freeze_config.freeze_embeddings)"),
        HeaderChange(field="frozen_tensors", old=3, new=2),
    )
    assert [(g.label, g.tensors, g.parameters, g.names) for g in change.newly_frozen] == [("proj", 1, 6, ("proj.w",))]
    assert [(g.label, g.names) for g in change.newly_trainable] == [("lm", ("lm.w",))]


def test_prefix_group_stops_at_the_first_layer_index() -> None:
    assert prefix_group("model.language_model.layers.3.mlp.up_proj.weight") == "model.language_model.layers"
    assert prefix_group("lm_head.weight") == "lm_head"
    assert prefix_group("bias") == "bias"
