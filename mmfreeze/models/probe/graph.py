"""The parameters a loss reaches: the leaves of its autograd graph (pure torch, no forward)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn


def reached_parameters(loss: torch.Tensor) -> frozenset[int]:
    """``id`` of every tensor whose ``AccumulateGrad`` node the graph of ``loss`` holds: what a
    backward from ``loss`` would give a gradient (activation checkpointing must be off, since a
    re-entrant checkpoint hides the parameters inside it until the backward runs)."""
    seen: set[object] = set()
    pending = [loss.grad_fn]
    reached: set[int] = set()
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # only AccumulateGrad nodes have one
        if variable is not None:
            reached.add(id(variable))
        pending.extend(child for child, _ in node.next_functions)
    return frozenset(reached)


def unreached_names(model: nn.Module, loss: torch.Tensor) -> frozenset[str]:
    """The names (``named_parameters()``, tied aliases once) of ``model``'s parameters ``loss`` does not reach."""
    reached = reached_parameters(loss)
    return frozenset(name for name, parameter in model.named_parameters() if id(parameter) not in reached)
