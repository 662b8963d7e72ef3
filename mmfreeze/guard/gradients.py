"""Trainable parameters that got no gradient: after the first backward, the loss reached them or not.

A trainable parameter that no path from the loss reaches keeps ``.grad`` ``None`` after a backward
(FSDP2 leaves it so; DDP stops with "Expected to have finished reduction"), the optimizer keeps no
state for it, and a resume fails later. Checked on this rank, since the data mix of a step differs
between ranks; a gradient accumulated over several micro-batches counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.guard.live import LiveModel

if TYPE_CHECKING:
    from torch import nn


def missing_gradients(model: nn.Module, live: LiveModel) -> tuple[str, ...]:
    """Canonical names of ``model``'s trainable parameters whose ``.grad`` is ``None``."""
    parameters = dict(model.named_parameters(remove_duplicate=False))
    return tuple(sorted(name for name in live.trainable if parameters[live.raw_names[name]].grad is None))
