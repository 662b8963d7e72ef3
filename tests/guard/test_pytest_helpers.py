"""The pytest helper: a mismatch is a test failure carrying the guard's message."""

from __future__ import annotations

import pytest
import torch

import mmfreeze.guard.verify as verify_module
from mmfreeze.exceptions import SnapshotError
from mmfreeze.guard.pytest_helpers import assert_frozen_set_matches
from tests.guard.helpers import FINETUNE, named, trainable_parameters


def test_a_faithful_model_passes_and_returns_what_was_checked(finetune):
    optimizer = torch.optim.AdamW(trainable_parameters(finetune.model))

    result = assert_frozen_set_matches(finetune.model, FINETUNE, optimizer=optimizer)

    assert result.frozen_tensors == 390 and result.optimizer_checked


def test_a_mismatch_fails_the_test_with_the_guards_message(finetune):
    named(finetune.model, "model.visual.merger.mlp.0.weight").requires_grad_(True)

    with pytest.raises(AssertionError) as caught:
        assert_frozen_set_matches(finetune.model, FINETUNE)

    assert str(caught.value).startswith(f"{FINETUNE}: the live model does not match the accepted snapshot")
    assert "      model.visual.merger.mlp.0.weight\n" in str(caught.value)


def test_a_missing_snapshot_is_an_error_not_a_failure(finetune, tmp_path):
    with pytest.raises(SnapshotError, match="no accepted snapshot at"):
        assert_frozen_set_matches(finetune.model, FINETUNE, snapshot=tmp_path / "none.frozen.txt")


def test_it_checks_this_process_alone(finetune, monkeypatch):
    def no_rank_lookup(*_: object, **__: object):
        raise AssertionError("the helper must not look for other ranks")

    monkeypatch.setattr(verify_module, "current_ranks", no_rank_lookup)

    assert assert_frozen_set_matches(finetune.model, FINETUNE).rank is None
