"""The optimizer check on its own: identity matching, and what is not an optimizer."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mmfreeze.guard.live import read_live_model
from mmfreeze.guard.optimizer import check_optimizer


def test_an_optimizer_over_exactly_the_trainable_parameters_is_ok():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[0].requires_grad_(False)

    findings = check_optimizer(torch.optim.AdamW([p for p in model.parameters() if p.requires_grad]), read_live_model(model), {})

    assert findings.ok


def test_an_equal_copy_of_a_parameter_is_not_the_parameter():
    """Matching is by identity: an optimizer built before parameters were replaced (FSDP2 wrapping
    swaps every parameter for a DTensor one) holds the old ones."""
    model = nn.Linear(2, 2)
    before = [nn.Parameter(p.detach().clone()) for p in model.parameters()]

    findings = check_optimizer(torch.optim.SGD(before, lr=0.1), read_live_model(model), {})

    assert findings.misses_trainable == ("bias", "weight")
    assert findings.foreign == ("param_groups[0] item 0: shape (2, 2)", "param_groups[0] item 1: shape (2,)")


def test_something_without_param_groups_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="optimizer= takes a torch optimizer \\(with param_groups\\), not list"):
        check_optimizer([], read_live_model(nn.Linear(2, 2)), {})


def test_each_trainable_tensor_must_sit_in_a_group_at_the_snapshots_rate():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    optimizer = torch.optim.AdamW([{"params": [model[0].weight], "lr_mult": 0.1, "wd_mult": 0.0},
                                   {"params": [model[0].bias, *model[1].parameters()]}])

    assert check_optimizer(optimizer, read_live_model(model), {"0.weight": (0.1, 0.0)}).ok
    findings = check_optimizer(optimizer, read_live_model(model), {"0.weight": (0.1, 1.0), "1.bias": (10.0, 1.0)})

    assert [wrong.describe() for wrong in findings.wrong_rate] == [
        "0.weight: lr_mult 0.1, wd_mult 0 here; the snapshot has lr_mult 0.1, wd_mult 1",
        "1.bias: lr_mult 1, wd_mult 1 here; the snapshot has lr_mult 10, wd_mult 1",
    ]
    assert not findings.ok
