"""Which optimizer group each trainable tensor joins: nemo-automodel 0.7.0's grouping, as data (pure).

``_build_param_groups`` (``components/optim/optimizer.py``) takes the trainable parameters of a
model part in ``named_parameters()`` order and gives each to the first override whose pattern
``re.search``-matches its canonical name; the others form the default group. Frozen parameters
are never grouped. The differential tests run the framework's function on meta-built models and
compare, tensor by tensor (``tests/framework/test_param_groups.py``). A selector entry
(:mod:`mmfreeze.freeze.optimizer`) takes the tensors its selector selects on the resolved model
(:func:`select_rates`), in the same place in the same first-match order; the integration hands the
framework's function exactly those names. Patterns come from the recipe and run time-bounded, with
``re``'s semantics (:class:`mmfreeze.freeze.optimizer.PatternSearch`): one that backtracks is an
input error, not a hang.

What the framework leaves silent is an input error here (:func:`check_overrides`): an entry that
matches no parameter, one that matches only frozen ones, one that earlier entries fully shadow,
entries under an optimizer that ignores them, and multipliers in a recipe without the LR
scheduler that applies them. 0.7.0 logs a warning for the first and the fourth, and says nothing
about the others; each message says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mmfreeze.exceptions import RecipeError
from mmfreeze.freeze.config import select_names
from mmfreeze.freeze.optimizer import GroupOverride, OptimizerSection, RoleSelector
from mmfreeze.freeze.targets import LANGUAGE_MODEL_KEY, FreezeTargets
from mmfreeze.recipes.optimizer import DEFAULT_RATE, SCHEDULER, Rate
from mmfreeze.suggest import closest_paths, did_you_mean

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


def rates_of(groups: ParamGroups) -> dict[Rate, frozenset[str]]:
    """The trainable tensors outside the default rate, by their multipliers (entries with the same
    multipliers train at the same rate, so they are one group here)."""
    found: dict[Rate, set[str]] = {}
    for name, override in groups.group_of.items():
        if override.rate != DEFAULT_RATE:
            found.setdefault(override.rate, set()).add(name)
    return {rate: frozenset(names) for rate, names in found.items()}


Selected = Mapping[int, frozenset[str]]
"""Override index -> the parameter names its selector selects (:func:`select_rates`)."""


def exact_names_pattern(names: Iterable[str]) -> str:
    """A regex that ``re.search`` matches on exactly ``names`` and nothing else: how a selector's
    tensors reach the framework's own ``_build_param_groups``. Anchored, and written as a trie, so a
    search costs the length of one name, not of the list (a language model has thousands)."""
    trie: dict[str, dict] = {}
    for name in names:
        node = trie
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}
    return f"^{_trie_regex(trie)}$"


def _trie_regex(node: dict[str, dict]) -> str:
    branches = [re.escape(char) + _trie_regex(child) if char else "" for char, child in sorted(node.items())]
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


def select_rates(section: OptimizerSection, targets: FreezeTargets, *, source: str) -> dict[int, frozenset[str]]:
    """What each selector entry selects on the model, or the :class:`RecipeError` of the first that
    names no modality, role, module or layer of it (worded as `freeze_config`'s entries are)."""
    selected = {}
    for override in section.selectors:
        selector = override.selector
        if isinstance(selector, RoleSelector):
            names, problem = _role_names(selector.group, targets)
        else:
            names, problem = select_names(selector, targets)  # type: ignore[arg-type]
        if problem is not None:
            raise RecipeError(problem, source=source, key=override.key)
        selected[override.index] = names
    return selected


def _role_names(group: str, targets: FreezeTargets) -> tuple[frozenset[str], str | None]:
    if group == LANGUAGE_MODEL_KEY:
        return targets.language_model, None
    modality, _, role = group.partition(".")
    have = [f"{m}.{r}" for m, roles in targets.roles.items() for r in roles]
    if role not in targets.roles.get(modality, ()):
        return frozenset(), (f"role: this model has no (modality, role) group {group!r}{did_you_mean(group, have)}; "
                             f"it has: {', '.join([*have, LANGUAGE_MODEL_KEY])}")
    return targets.role_names(modality, role), None


def assign_groups(
    names: Sequence[str], trainable: Iterable[str], overrides: Sequence[GroupOverride], selected: Selected | None = None,
    *, source: str | None = None,
) -> ParamGroups:
    """``names`` in model order; the first matching override takes each trainable one. A pattern
    entry matches by ``re.search`` on the canonical name (time-bounded: one that backtracks is a
    :class:`RecipeError` naming ``source``, else the entry's own recipe), a selector entry by
    membership in ``selected[index]``."""
    trainable = frozenset(trainable)
    selected = selected or {}
    compiled = [(override, override.search(source=source) if override.selector is None
                 else selected[override.index].__contains__) for override in overrides]
    group_of: dict[str, GroupOverride] = {}
    matched: dict[int, list[str]] = {override.index: [] for override in overrides}
    for name in names:
        canonical = canonical_name(name)
        first = None
        for override, matches in compiled:
            if matches(canonical if override.selector is None else name):
                matched[override.index].append(name)
                first = first or override
        if first is not None and name in trainable:
            group_of[name] = first
    return ParamGroups(group_of=group_of, matched={index: tuple(found) for index, found in matched.items()})


def check_overrides(
    section: OptimizerSection, names: Sequence[str], trainable: Iterable[str], *, source: str,
    selected: Selected | None = None,
) -> ParamGroups:
    """The groups, or the :class:`RecipeError` of the first entry the framework would not apply as
    written. ``selected``: what the selector entries select (:func:`select_rates`)."""
    trainable = frozenset(trainable)
    if section.overrides and section.ignores_overrides:
        raise RecipeError(
            f"{section.target} does its own parameter grouping and ignores param_group_overrides ({WARNS_ONLY} "
            "one group); use a torch optimizer (torch.optim.AdamW, ...) or remove the overrides",
            source=source, key=section.overrides[0].key)
    rated = next((override for override in section.overrides if override.rate != DEFAULT_RATE), None)
    if rated is not None and not section.scheduled:
        raise RecipeError(
            f"{rated.names_what()} sets lr_mult {rated.lr_mult:g}, wd_mult {rated.wd_mult:g}, and this recipe has no "
            f"`{SCHEDULER}` section: the multipliers are applied only by the LR scheduler, which a recipe builds from "
            f"that section, so every group trains at the base rate ({SILENT}); add one, e.g. "
            f"`{SCHEDULER}: {{lr_decay_style: constant}}`", source=source, key=rated.key)
    groups = assign_groups(names, trainable, section.overrides, selected, source=source)
    for override in section.overrides:
        matched = groups.matched[override.index]
        if not matched:  # a selector that selects nothing failed in select_rates already
            nearest = closest_paths(override.pattern, names, count=3, cutoff=0.4)
            hint = f"; nearest parameter names: {', '.join(nearest)}" if nearest else ""
            raise RecipeError(f"pattern {override.pattern!r} matches no parameter of this model ({WARNS_ONLY} "
                              f"without the group){hint}", source=source, key=f"{override.key}.pattern")
        if not any(name in trainable for name in matched):
            raise RecipeError(
                f"{override.names_what()} matches only frozen parameters ({len(matched)}, e.g. {matched[0]}): "
                f"only trainable ones are grouped, so its lr_mult/wd_mult apply to nothing ({SILENT}); unfreeze "
                "them or remove the entry", source=source, key=_matcher_key(override))
        if not any(groups.group_of.get(name) == override for name in matched):
            earlier = sorted({groups.group_of[name].index for name in matched if name in groups.group_of})
            raise RecipeError(
                f"{override.names_what()} is fully shadowed: every trainable parameter it matches is taken by "
                f"an earlier entry ({', '.join(f'[{index}]' for index in earlier)}; the first match wins, {SILENT}); "
                "move it before them or remove it", source=source, key=_matcher_key(override))
    return groups


def _matcher_key(override: GroupOverride) -> str:
    """The key of what names the entry's tensors: ``...[0].pattern``, or the entry of a selector."""
    return f"{override.key}.pattern" if override.selector is None else override.key
