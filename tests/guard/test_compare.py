"""The frozen-set comparison: by name both ways, and added or removed tensors by count."""

from __future__ import annotations

from torch import nn

from mmfreeze.guard.compare import compare_with_snapshot
from mmfreeze.guard.live import read_live_model
from mmfreeze.snapshots.format import Snapshot, SnapshotHeader


def snapshot(frozen: list[str], *, trainable_tensors: int) -> Snapshot:
    header = SnapshotHeader(recipe="r.yaml", model_id="m", config="local", architecture="Sequential", framework="nemo-automodel 0.7",
                            transformers="5.24.0", frozen_tensors=len(frozen), trainable_tensors=trainable_tensors,
                            frozen_parameters=0, trainable_parameters=0)
    return Snapshot(header=header, lines=tuple(sorted(frozen)))


def model() -> nn.Module:
    layers = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    layers[0].requires_grad_(False)
    return layers


def test_equal_frozen_sets_and_counts_are_empty():
    difference = compare_with_snapshot(read_live_model(model()), snapshot(["0.weight", "0.bias"], trainable_tensors=2))

    assert difference.empty


def test_each_kind_of_name_difference_is_listed_sorted():
    stored = snapshot(["0.weight", "1.bias", "2.weight"], trainable_tensors=1)

    difference = compare_with_snapshot(read_live_model(model()), stored)

    assert difference.newly_frozen == ("0.bias",)
    assert difference.newly_trainable == ("1.bias",)
    assert difference.missing == ("2.weight",)
    assert not difference.tensor_count_differs and not difference.empty


def test_an_added_trainable_tensor_differs_by_count_only():
    live = model()
    live.append(nn.Linear(2, 2))

    difference = compare_with_snapshot(read_live_model(live), snapshot(["0.weight", "0.bias"], trainable_tensors=2))

    assert (difference.model_tensors, difference.snapshot_tensors) == (6, 4)
    assert not (difference.newly_frozen or difference.newly_trainable or difference.missing) and not difference.empty
