"""An optimizer's param groups against the live model: every trainable parameter once, nothing
else, each at the rate the snapshot records.

Parameters are matched by identity, so an optimizer built before FSDP2 wrapping or PEFT
injection (which replace parameter objects) holds tensors that are no longer the model's. A
group's rate is its ``lr_mult`` and ``wd_mult`` (absent: 1), which nemo-automodel's scheduler
multiplies into the group's learning rate and weight decay every step
(``OptimizerParamScheduler.step``); the snapshot's ``--- rate`` sections say which tensors train
at which, all others at ``(1, 1)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.guard.live import LiveModel
from mmfreeze.recipes.optimizer import DEFAULT_RATE, Rate


@dataclass(frozen=True, kw_only=True)
class HeldTwice:
    name: str
    groups: tuple[int, ...]
    """The param-group index of every occurrence (the same index twice: twice in one group)."""


@dataclass(frozen=True, kw_only=True)
class WrongRate:
    name: str
    held: Rate
    """Its param group's ``(lr_mult, wd_mult)``."""
    snapshot: Rate

    def describe(self) -> str:
        return (f"{self.name}: lr_mult {self.held[0]:g}, wd_mult {self.held[1]:g} here; the snapshot has "
                f"lr_mult {self.snapshot[0]:g}, wd_mult {self.snapshot[1]:g}")


@dataclass(frozen=True, kw_only=True)
class OptimizerFindings:
    """What is wrong with an optimizer's param groups; ``ok`` when nothing is."""

    holds_frozen: tuple[str, ...]
    misses_trainable: tuple[str, ...]
    held_twice: tuple[HeldTwice, ...]
    foreign: tuple[str, ...]
    """Tensors in the param groups that are not parameters of the model, described by position."""
    wrong_rate: tuple[WrongRate, ...] = ()
    """Trainable tensors held at another rate than the snapshot's."""

    @property
    def ok(self) -> bool:
        return not (self.holds_frozen or self.misses_trainable or self.held_twice or self.foreign or self.wrong_rate)


def check_optimizer(optimizer: Any, live: LiveModel, rates: Mapping[str, Rate]) -> OptimizerFindings:
    """Check ``optimizer.param_groups`` (a torch optimizer, or anything shaped like one); ``rates``:
    the snapshot's rate of each tensor it lists (every other one: :data:`DEFAULT_RATE`)."""
    held: dict[str, list[int]] = {}
    rate_of: dict[str, Rate] = {}
    foreign: list[str] = []
    for group_index, position, tensor, rate in _held_tensors(optimizer):
        name = live.names_by_identity.get(id(tensor))
        if name is None:
            foreign.append(f"param_groups[{group_index}] item {position}: shape {tuple(getattr(tensor, 'shape', ()))}")
        else:
            held.setdefault(name, []).append(group_index)
            rate_of.setdefault(name, rate)
    wrong = (WrongRate(name=name, held=rate, snapshot=rates.get(name, DEFAULT_RATE))
             for name, rate in sorted(rate_of.items()) if name in live.trainable)
    return OptimizerFindings(
        holds_frozen=tuple(sorted(name for name in held if name in live.frozen)),
        misses_trainable=tuple(sorted(live.trainable.difference(held))),
        held_twice=tuple(HeldTwice(name=n, groups=tuple(g)) for n, g in sorted(held.items()) if len(g) > 1),
        foreign=tuple(foreign),
        wrong_rate=tuple(found for found in wrong if found.held != found.snapshot),
    )


def _held_tensors(optimizer: Any) -> Iterator[tuple[int, int, Any, Rate]]:
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise TypeError(f"optimizer= takes a torch optimizer (with param_groups), not {type(optimizer).__name__}")
    for group_index, group in enumerate(groups):
        rate = (float(group.get("lr_mult", 1.0)), float(group.get("wd_mult", 1.0)))
        for position, tensor in enumerate(group["params"]):
            yield group_index, position, tensor, rate
