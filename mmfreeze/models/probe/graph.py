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
    seen = {loss.grad_fn}
    pending = [] if loss.grad_fn is None else [loss.grad_fn]  # a loss no parameter reaches has no graph
    reached: set[int] = set()
    while pending:
        node = pending.pop()
        if hasattr(node, "variable"):  # only AccumulateGrad nodes have one
            reached.add(id(node.variable))
        for child, _ in node.next_functions:
            if child is not None and child not in seen:  # each node queued once: graphs share most subgraphs
                seen.add(child)
                pending.append(child)
    return frozenset(reached)


def unreached_names(model: nn.Module, loss: torch.Tensor) -> frozenset[str]:
    """The names (``named_parameters()``, tied aliases once) of ``model``'s parameters ``loss`` does not reach."""
    reached = reached_parameters(loss)
    return frozenset(name for name, parameter in model.named_parameters() if id(parameter) not in reached)
