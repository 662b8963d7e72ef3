"""An optimizer's param groups against the live model: every trainable parameter once, nothing else.

Parameters are matched by identity, so an optimizer built before FSDP2 wrapping or PEFT
injection (which replace parameter objects) holds tensors that are no longer the model's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mmfreeze.guard.live import LiveModel


@dataclass(frozen=True, kw_only=True)
class HeldTwice:
    name: str
    groups: tuple[int, ...]
    """The param-group index of every occurrence (the same index twice: twice in one group)."""


@dataclass(frozen=True, kw_only=True)
class OptimizerFindings:
    """What is wrong with an optimizer's param groups; ``ok`` when nothing is."""

    holds_frozen: tuple[str, ...]
    misses_trainable: tuple[str, ...]
    held_twice: tuple[HeldTwice, ...]
    foreign: tuple[str, ...]
    """Tensors in the param groups that are not parameters of the model, described by position."""

    @property
    def ok(self) -> bool:
        return not (self.holds_frozen or self.misses_trainable or self.held_twice or self.foreign)


def check_optimizer(optimizer: Any, live: LiveModel) -> OptimizerFindings:
    """Check ``optimizer.param_groups`` (a torch optimizer, or anything shaped like one)."""
    held: dict[str, list[int]] = {}
    foreign: list[str] = []
    for group_index, position, tensor in _held_tensors(optimizer):
        name = live.names_by_identity.get(id(tensor))
        if name is None:
            foreign.append(f"param_groups[{group_index}] item {position}: shape {tuple(getattr(tensor, 'shape', ()))}")
        else:
            held.setdefault(name, []).append(group_index)
    return OptimizerFindings(
        holds_frozen=tuple(sorted(name for name in held if name in live.frozen)),
        misses_trainable=tuple(sorted(live.trainable.difference(held))),
        held_twice=tuple(HeldTwice(name=n, groups=tuple(g)) for n, g in sorted(held.items()) if len(g) > 1),
        foreign=tuple(foreign),
    )


def _held_tensors(optimizer: Any) -> Iterator[tuple[int, int, Any]]:
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise TypeError(f"optimizer= takes a torch optimizer (with param_groups), not {type(optimizer).__name__}")
    for group_index, group in enumerate(groups):
        for position, tensor in enumerate(group["params"]):
            yield group_index, position, tensor
