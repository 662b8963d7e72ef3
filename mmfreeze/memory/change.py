"""What a change of the trainable set costs per rank: the memory model before and after, on one
trained structure, for the whole change and for each group of tensors that moved.

A diff shows it beside what moved (`snapshot --check`, `migrate --diff`); it is computed only
there, for a changed recipe, so the corpus check pays nothing for it. The figure is the change of
the bytes of the rank whose total changes most: gradients and optimizer states (and parameters,
where the layout keeps frozen modules whole). Activations are out of scope, and every description
says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mmfreeze.counts import readable_bytes, readable_count
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.memory.recipe import choose_world_size, recipe_memory

if TYPE_CHECKING:
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.memory.model import MemoryEstimate, RankMemory
    from mmfreeze.models.loader import LoadedStructure
    from mmfreeze.recipes.recipe import Recipe
    from mmfreeze.resolver.labels import ModuleGroup

NOT_COUNTED = "activations not counted"
NO_WORLD_SIZE = "no world size: set world_size under [tool.mmfreeze], or the recipe's distributed.dp_size"


@dataclass(frozen=True, kw_only=True)
class MemoryDelta:
    """The change of one rank's bytes (the rank whose total changes most)."""

    world_size: int
    trainable: int
    """The change in trainable parameters (elements), for the reader."""
    parameters: int
    gradients: int
    optimizer: int
    optimizer_name: str

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer

    def per_rank(self) -> str:
        """``+535 MB``."""
        return _signed(self.total, readable_bytes)

    def brief(self) -> str:
        """``+535 MB per rank at 8 ranks``: beside a group, under a line that says what is counted."""
        return f"{self.per_rank()} per rank at {self.world_size} ranks"

    def describe(self) -> str:
        """``+44.6M trainable parameters: +535 MB per rank at 8 ranks (gradients + AdamW states; activations not counted)``."""
        what = ["gradients", f"{self.optimizer_name} states"] + (["parameters"] if self.parameters else [])
        return (f"{_signed(self.trainable, readable_count)} trainable parameters: {self.per_rank()} per rank at "
                f"{self.world_size} ranks ({' + '.join(what)}; {NOT_COUNTED})")


@dataclass(frozen=True, kw_only=True)
class GroupCost:
    """The cost of one group's move alone."""

    kind: str
    """``newly frozen`` or ``newly trainable``."""
    label: str
    delta: MemoryDelta


@dataclass(frozen=True, kw_only=True)
class ChangeCost:
    """A change's cost per rank, whole and per group of moved tensors; or why it cannot be sized."""

    total: MemoryDelta | None = None
    groups: tuple[GroupCost, ...] = ()
    unsized: str | None = None
    """Why there is no figure: the message of the input that cannot be sized, naming its key."""

    def describe(self) -> str:
        return self.total.describe() if self.total is not None else f"not sized: {self.unsized}"

    def of_group(self, kind: str, label: str) -> MemoryDelta | None:
        return next((group.delta for group in self.groups if (group.kind, group.label) == (kind, label)), None)


def change_cost(
    recipe: Recipe, after: FrozenSetResult, before_frozen: frozenset[str],
    groups: Mapping[tuple[str, str], frozenset[str]], *, world_size: int | None,
    loaded: LoadedStructure | None = None,
) -> ChangeCost:
    """The cost of going from ``before_frozen`` to ``after`` (both on ``after.structure``), and of
    each group's move alone (``groups``: (kind, label) -> the names that moved). ``loaded``: the
    model as this run built it, which says whether the framework trains another class than the
    one built here (then there is no figure) and, under tensor parallelism, how its plan splits it
    (every figure of the change needs that). A world size mmfreeze cannot know, or an input it
    cannot size, is said, never guessed."""
    if world_size is None:
        return ChangeCost(unsized=NO_WORLD_SIZE)
    try:
        # differences of one recipe's figures: a distillation teacher, the same in each, is left out
        base = recipe_memory(recipe, after, world_size=world_size, frozen_names=before_frozen, loaded=loaded,
                             delta_only=True)
        whole = _delta(base, recipe_memory(recipe, after, world_size=world_size, loaded=loaded, delta_only=True),
                       after, before_frozen, after.frozen)
        parts = []
        for (kind, label), names in groups.items():
            moved = before_frozen ^ names  # that group alone moved
            alone = recipe_memory(recipe, after, world_size=world_size, frozen_names=moved, loaded=loaded,
                                  delta_only=True)
            parts.append(GroupCost(kind=kind, label=label, delta=_delta(base, alone, after, before_frozen, moved)))
    except MmfreezeError as error:
        return ChangeCost(unsized=error.message if error.key is None else f"{error.key}: {error.message}")
    return ChangeCost(total=whole, groups=tuple(parts))


def moved_cost(
    recipe: Recipe, after: FrozenSetResult, newly_frozen: Sequence[ModuleGroup], newly_trainable: Sequence[ModuleGroup],
    *, world_setting: int | None, loaded: LoadedStructure | None,
) -> ChangeCost:
    """What a diff's moved groups cost, at ``world_setting`` (``[tool.mmfreeze] world_size``) or
    the recipe's sizes: the set before them is ``after`` with every moved group moved back."""
    names = frozenset(info.name for info in after.structure.parameters)
    groups = {(kind, group.label): frozenset(group.names) & names
              for kind, moved in (("newly frozen", newly_frozen), ("newly trainable", newly_trainable))
              for group in moved}
    world = choose_world_size(recipe, option=None, setting=world_setting)
    return change_cost(recipe, after, after.frozen ^ frozenset().union(*groups.values()), groups,
                       world_size=None if world is None else world.ranks, loaded=loaded)


def _delta(
    before: MemoryEstimate, after: MemoryEstimate, result: FrozenSetResult, before_frozen: frozenset[str],
    after_frozen: frozenset[str],
) -> MemoryDelta:
    numel = {info.name: info.numel for info in result.structure.parameters}
    old, new = max(zip(before.ranks, after.ranks, strict=True), key=lambda pair: abs(_sum(pair[1]) - _sum(pair[0])))
    return MemoryDelta(
        world_size=after.world_size,
        trainable=sum(numel[name] for name in before_frozen - after_frozen)
        - sum(numel[name] for name in after_frozen - before_frozen),
        parameters=new.parameters - old.parameters, gradients=new.gradients - old.gradients,
        optimizer=new.optimizer - old.optimizer, optimizer_name=after.optimizer)


def _sum(rank: RankMemory) -> int:
    return rank.parameters + rank.gradients + rank.optimizer


def _signed(value: int, spell: Callable[[int], str]) -> str:
    return ("+" if value >= 0 else "-") + spell(abs(value))
