"""Which optimizer group each trainable tensor joins: nemo-automodel 0.7.0's grouping, as data (pure).

``_build_param_groups`` (``components/optim/optimizer.py``) takes the trainable parameters of a
model part in ``named_parameters()`` order and gives each to the first override whose pattern
``re.search``-matches its canonical name; the others form the default group. Frozen parameters
are never grouped. The differential tests run the framework's function on meta-built models and
compare, tensor by tensor (``tests/framework/test_param_groups.py``).

What the framework leaves silent is an input error here (:func:`check_overrides`): an entry that
matches no parameter, one that matches only frozen ones, one that earlier entries fully shadow,
and entries under an optimizer that ignores them. 0.7.0 logs a warning for the first and the last,
and says nothing about the other two; each message says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.optimizer import GroupOverride, OptimizerSection
from mmfreeze.suggest import closest_paths

CHECKPOINT_WRAPPER = "_checkpoint_wrapped_module."
"""The segment ``canonical_parameter_fqn`` removes (activation-checkpoint wrappers)."""
WARNS_ONLY = "nemo-automodel 0.7.0 only logs a warning and trains on"
SILENT = "nemo-automodel 0.7.0 accepts it silently"


def canonical_name(name: str) -> str:
    """The name the framework matches: ``canonical_parameter_fqn``'s, wrapper segments removed."""
    return name.replace(CHECKPOINT_WRAPPER, "")


@dataclass(frozen=True)
class ParamGroups:
    """Trainable tensor -> the override whose group it joins (absent: the default group)."""

    group_of: dict[str, GroupOverride]
    matched: dict[int, tuple[str, ...]]
    """Override index -> every parameter, frozen or not, its pattern matches."""


Rate = tuple[float, float]
"""``(lr_mult, wd_mult)``; the default group's is ``(1.0, 1.0)``."""
DEFAULT_RATE: Rate = (1.0, 1.0)


def rates_of(groups: ParamGroups) -> dict[Rate, frozenset[str]]:
    """The trainable tensors outside the default rate, by their multipliers (entries with the same
    multipliers train at the same rate, so they are one group here)."""
    found: dict[Rate, set[str]] = {}
    for name, override in groups.group_of.items():
        rate = (override.lr_mult, override.wd_mult)
        if rate != DEFAULT_RATE:
            found.setdefault(rate, set()).add(name)
    return {rate: frozenset(names) for rate, names in found.items()}


def assign_groups(names: Sequence[str], trainable: Iterable[str], overrides: Sequence[GroupOverride]) -> ParamGroups:
    """``names`` in model order; the first matching override takes each trainable one."""
    trainable = frozenset(trainable)
    compiled = [(override, override.regex) for override in overrides]
    group_of: dict[str, GroupOverride] = {}
    matched: dict[int, list[str]] = {override.index: [] for override in overrides}
    for name in names:
        canonical = canonical_name(name)
        first = None
        for override, regex in compiled:
            if regex.search(canonical):
                matched[override.index].append(name)
                first = first or override
        if first is not None and name in trainable:
            group_of[name] = first
    return ParamGroups(group_of=group_of, matched={index: tuple(found) for index, found in matched.items()})


def check_overrides(
    section: OptimizerSection, names: Sequence[str], trainable: Iterable[str], *, source: str
) -> ParamGroups:
    """The groups, or the :class:`RecipeError` of the first entry the framework would not apply as written."""
    trainable = frozenset(trainable)
    if section.overrides and section.ignores_overrides:
        raise RecipeError(
            f"{section.target} does its own parameter grouping and ignores param_group_overrides ({WARNS_ONLY} "
            "one group); use a torch optimizer (torch.optim.AdamW, ...) or remove the overrides",
            source=source, key=section.overrides[0].key)
    groups = assign_groups(names, trainable, section.overrides)
    for override in section.overrides:
        matched = groups.matched[override.index]
        if not matched:
            nearest = closest_paths(override.pattern, names, count=3, cutoff=0.4)
            hint = f"; nearest parameter names: {', '.join(nearest)}" if nearest else ""
            raise RecipeError(f"pattern {override.pattern!r} matches no parameter of this model ({WARNS_ONLY} "
                              f"without the group){hint}", source=source, key=f"{override.key}.pattern")
        if not any(name in trainable for name in matched):
            raise RecipeError(
                f"pattern {override.pattern!r} matches only frozen parameters ({len(matched)}, e.g. {matched[0]}): "
                f"only trainable ones are grouped, so its lr_mult/wd_mult apply to nothing ({SILENT}); unfreeze "
                "them or remove the entry", source=source, key=f"{override.key}.pattern")
        if not any(groups.group_of.get(name) == override for name in matched):
            earlier = sorted({groups.group_of[name].index for name in matched if name in groups.group_of})
            raise RecipeError(
                f"pattern {override.pattern!r} is fully shadowed: every trainable parameter it matches is taken by "
                f"an earlier entry ({', '.join(f'[{index}]' for index in earlier)}; the first match wins, {SILENT}); "
                "move it before them or remove it", source=source, key=f"{override.key}.pattern")
    return groups
