"""The recipe's `optimizer` section, as far as it decides the rate each tensor trains at (pure).

nemo-automodel 0.7.0 reads ``optimizer.param_group_overrides`` (``components/optim/optimizer.py``):
a list of ``{pattern, lr_mult, wd_mult}``, each pattern a Python regex matched with ``re.search``
against the canonical parameter name; the first matching entry takes a trainable tensor, the rest
stay in the default group. ``ParamGroupOverride(**entry)`` is all the validation it does, so a
pattern that does not compile, or a multiplier that is not a number, fails later, at the first
optimizer step. Here both are input errors that name the entry, and so is a multiplier that is NaN
or infinite (0.7.0 trains on with it: every step of that group is NaN).

The patterns come from the recipe, so mmfreeze never runs them on Python's backtracking ``re``: a
pattern such as ``^(?:.|.)+\\d$`` takes exponential time on a long parameter name, and would hang
a check (the framework hangs on it at the first optimizer step). They run on the ``regex``
package in its ``VERSION0`` mode, which reads Python's syntax as ``re`` does, under a time limit
per entry (:class:`PatternSearch`, :data:`PATTERN_SECONDS`); a pattern that exceeds it is an input
error naming the entry. Validity is still ``re``'s: a pattern ``re.compile`` rejects is an error.

An entry may name its tensors with the `(modality, role)` vocabulary instead of a regex, with the
selectors of `freeze_config` (:mod:`mmfreeze.freeze.config`), resolved on the model::

    param_group_overrides:
      - {role: vision.projector, lr_mult: 10.0}            # a (modality, role) group, or language_model
      - {layers: vision.tower, last: 4, lr_mult: 0.5}      # a layer range
      - {glob: "model.language_model.layers.*.mlp.gate", lr_mult: 0.1, wd_mult: 0.0}
      - {path: model.visual, lr_mult: 0.1}                 # a module's subtree
      - {pattern: 'lm_head', lr_mult: 2.0}                 # the framework's regex, as before

The order and the first-match rule are the framework's. Only mmfreeze's integration
(``mmfreeze.nemo``) runs selector entries; 0.7.0 alone rejects them (``ParamGroupOverride``
takes no such keyword).

Dion-family optimizers (Dion, Dion2, Muon, NorMuon) group parameters themselves and ignore the
overrides with a warning (``components/optim/dion.py``, ``is_dion_optimizer``: a class whose module
starts with ``dion`` or whose name is one of those four).

The groups carry only ``lr_mult`` / ``wd_mult``; the LR scheduler multiplies them in at every step
(``OptimizerParamScheduler.step``), and a recipe builds one only when its ``lr_scheduler`` section
is there and not empty (``recipes/vlm/finetune.py``). Without it every group trains at the base
rate, silently.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import regex

from mmfreeze.exceptions import FreezeConfigError, RecipeError
from mmfreeze.freeze.config import LAYERS_KEY, RANGE_KEYS, LayerRange, parse_layer_range
from mmfreeze.freeze.selectors import ModuleSelector, parse_module_selector
from mmfreeze.freeze.targets import LANGUAGE_MODEL_KEY
from mmfreeze.recipes.optimizer import OVERRIDES, SCHEDULER, SECTION
from mmfreeze.suggest import did_you_mean

PATTERN_KEY = "pattern"
ROLE_KEY = "role"
RATE_KEYS = ("lr_mult", "wd_mult")
SELECTOR_KEYS = (ROLE_KEY, "path", "glob", LAYERS_KEY)
"""What an entry may name its tensors with instead of a ``pattern``; exactly one of them."""
ENTRY_KEYS = (PATTERN_KEY, *SELECTOR_KEYS, *RANGE_KEYS, *RATE_KEYS)
ENTRY_SHAPES = ("{pattern: <regex>} or a selector ({role: vision.tower}, {role: language_model}, {path: X}, "
                "{glob: X}, {layers: GROUP, last: N}), with lr_mult and wd_mult")
FRAMEWORK_KEYS = (PATTERN_KEY, *RATE_KEYS)
"""What nemo-automodel 0.7.0's ``ParamGroupOverride`` takes."""
DION_NAMES = frozenset({"Dion", "Dion2", "Muon", "NorMuon"})
"""The class names ``is_dion_optimizer`` recognises; their typed configs (``MuonConfig``, ...) too."""
PATTERN_SECONDS = 2.0
"""How long one entry's pattern may take over all the parameter names of one model, in processor
time (``regex`` measures its timeout so: a loaded machine takes longer by the clock for the same
work). A plain pattern takes a few microseconds per name (0.05 s on 20,000 MoE expert tensors)."""


@dataclass(frozen=True, kw_only=True)
class RoleSelector:
    """``{role: vision.tower}`` (a resolved `(modality, role)` group) or ``{role: language_model}``."""

    where: str
    group: str

    def describe(self) -> str:
        return f"role: {self.group}"


RateSelector = RoleSelector | ModuleSelector | LayerRange


@dataclass(frozen=True, kw_only=True)
class GroupOverride:
    """One ``param_group_overrides`` entry; ``index`` is its place in the list (earlier wins).
    Exactly one of ``pattern`` (the framework's regex) and ``selector`` is set."""

    index: int
    pattern: str | None = None
    selector: RateSelector | None = None
    lr_mult: float = 1.0
    wd_mult: float = 1.0
    source: str | None = field(default=None, compare=False)
    """The recipe as messages name it (errors found when the pattern runs name it)."""

    @property
    def key(self) -> str:
        return f"{SECTION}.{OVERRIDES}[{self.index}]"

    def search(self, *, source: str | None = None) -> PatternSearch:
        """A fresh ``re.search`` of the pattern, bounded to :data:`PATTERN_SECONDS` over every name it is asked about."""
        if self.pattern is None:
            raise ValueError(f"{self.key} names its tensors with a selector, not a regex")
        return PatternSearch(pattern=self.pattern, key=f"{self.key}.{PATTERN_KEY}", source=source or self.source)

    @property
    def rate(self) -> tuple[float, float]:
        return self.lr_mult, self.wd_mult

    def names_what(self) -> str:
        """``pattern '...'`` or the selector (``role: vision.tower``)."""
        return f"pattern {self.pattern!r}" if self.selector is None else f"`{self.selector.describe()}`"

    def describe(self) -> str:
        return f"{self.key} ({self.names_what()}, lr_mult {self.lr_mult:g}, wd_mult {self.wd_mult:g})"


@dataclass(frozen=True, kw_only=True)
class OptimizerSection:
    """What the recipe's optimizer does with parameter groups."""

    target: str
    """The `_target_` as written (never imported), ``""`` without one."""
    overrides: tuple[GroupOverride, ...] = ()
    scheduled: bool = True
    """The recipe has an ``lr_scheduler`` section, which applies the multipliers."""

    @property
    def ignores_overrides(self) -> bool:
        """A Dion-family optimizer, which does its own grouping."""
        module, _, name = self.target.rpartition(".")
        return module.split(".")[0] == "dion" or name in DION_NAMES or name.removesuffix("Config") in DION_NAMES

    @property
    def selectors(self) -> tuple[GroupOverride, ...]:
        """The entries that name their tensors with a selector (only the integration runs them)."""
        return tuple(override for override in self.overrides if override.selector is not None)


class PatternSearch:
    """``re.search(pattern, name) is not None`` with Python's semantics, run by ``regex``
    (``VERSION0``) under one time budget shared by every call: a pattern that backtracks on the
    model's names is a :class:`RecipeError` naming ``key`` within ``seconds``, not a hang."""

    def __init__(self, *, pattern: str, key: str, source: str | None, seconds: float = PATTERN_SECONDS) -> None:
        self.pattern = pattern
        self.key = key
        self.source = source
        self.seconds = seconds
        self._compiled = compile_bounded(pattern, key=key, source=source)
        self._left = seconds

    def __call__(self, name: str) -> bool:
        started = time.process_time()
        try:
            if self._left <= 0:  # regex reads timeout=0 as "already out of time" too
                raise TimeoutError
            found = self._compiled.search(name, timeout=self._left)
        except TimeoutError:
            raise RecipeError(
                f"pattern {self.pattern!r} did not finish matching this model's parameter names within "
                f"{self.seconds:g} s of processor time (last tried: {name}): it backtracks, as a repeated group whose branches match "
                "the same text does (`(?:.|.)+`, `(a+)+`), and nemo-automodel's re.search would hang on it at the "
                "first optimizer step; write it without nested or overlapping repetition",
                source=self.source, key=self.key) from None
        self._left -= time.process_time() - started
        return found is not None


def compile_bounded(pattern: str, *, key: str, source: str | None) -> regex.Pattern[str]:
    """``pattern`` for :class:`PatternSearch`: valid for ``re`` (the framework's engine) and compiled
    by ``regex`` in ``VERSION0``, whose matching is ``re``'s; a :class:`RecipeError` naming ``key`` if not."""
    try:
        re.compile(pattern)
    except re.error as error:
        raise RecipeError(f"{pattern!r} is not a Python regex ({error}); it is matched with re.search against "
                          "parameter names", source=source, key=key) from None
    try:
        return regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, ValueError) as error:
        raise RecipeError(f"{pattern!r} is a Python regex that mmfreeze cannot run with a time limit (the regex "
                          f"package rejects it: {error}); write it without that construct",
                          source=source, key=key) from None


def parse_optimizer(document: Mapping[str, Any], *, source: str | None = None) -> OptimizerSection | None:
    """The recipe's optimizer section; ``None`` without one. A malformed override is a
    :class:`RecipeError` naming the entry and what is valid."""
    section = document.get(SECTION)
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise RecipeError(f"must be a mapping with a `_target_`, got {section!r}", source=source, key=SECTION)
    entries = section.get(OVERRIDES) or []
    if not isinstance(entries, list):
        raise RecipeError(f"must be a list of entries, each {ENTRY_SHAPES}; got {entries!r}",
                          source=source, key=f"{SECTION}.{OVERRIDES}")
    target = section.get("_target_")
    return OptimizerSection(target=target if isinstance(target, str) else "",
                            overrides=tuple(parse_override(index, entry, source) for index, entry in enumerate(entries)),
                            scheduled=bool(document.get(SCHEDULER)))


def parse_override(index: int, entry: Any, source: str | None) -> GroupOverride:
    """One entry (``index`` in the list) as a :class:`GroupOverride`, or a :class:`RecipeError` keyed by it."""
    key = f"{SECTION}.{OVERRIDES}[{index}]"
    kinds = [name for name in (PATTERN_KEY, *SELECTOR_KEYS) if isinstance(entry, Mapping) and name in entry]
    if not isinstance(entry, Mapping) or len(kinds) != 1:
        found = f" (it has {', '.join(kinds)})" if len(kinds) > 1 else ""
        raise RecipeError(f"an entry is {ENTRY_SHAPES}; got {entry!r}{found}", source=source, key=key)
    for name in entry:
        if name not in ENTRY_KEYS or (name in RANGE_KEYS and kinds != [LAYERS_KEY]):
            raise RecipeError(
                f"unknown key {name!r}{did_you_mean(str(name), ENTRY_KEYS)}; nemo-automodel's ParamGroupOverride "
                f"takes {', '.join(FRAMEWORK_KEYS)}, and with mmfreeze's integration an entry may name its tensors "
                f"with {', '.join(SELECTOR_KEYS)} instead of pattern", source=source, key=f"{key}.{name}")
    rates = {name: _multiplier(entry, name, key, source) for name in RATE_KEYS}
    if kinds == [PATTERN_KEY]:
        return GroupOverride(index=index, pattern=_pattern(entry[PATTERN_KEY], key, source), source=source, **rates)
    return GroupOverride(index=index, selector=_selector(entry, kinds[0], index, source), source=source, **rates)


def _pattern(pattern: Any, key: str, source: str | None) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise RecipeError(f"must be a non-empty regex string, got {pattern!r}", source=source, key=f"{key}.pattern")
    compile_bounded(pattern, key=f"{key}.pattern", source=source)
    return pattern


def _multiplier(entry: Mapping[str, Any], name: str, key: str, source: str | None) -> float:
    value = entry.get(name, 1.0)
    problem = multiplier_problem(value)
    if problem is not None:
        raise RecipeError(problem, source=source, key=f"{key}.{name}")
    return float(value)


def multiplier_problem(value: Any) -> str | None:
    """Why ``value`` is no ``lr_mult`` / ``wd_mult`` (the recipe's, and a snapshot's rate), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:  # NaN passes `< 0`
        return f"must be a non-negative number, got {value!r}"
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float range
        number = math.inf
    if not math.isfinite(number):
        return (f"must be a finite number, got {value!r}: the scheduler multiplies the group's rate by it, "
                "so every step of the group would be NaN or infinite (nemo-automodel 0.7.0 accepts it silently)")
    return None


def _selector(entry: Mapping[str, Any], kind: str, index: int, source: str | None) -> RateSelector:
    where = f"{OVERRIDES}[{index}]"
    if kind == ROLE_KEY:
        group = entry[ROLE_KEY]
        if not isinstance(group, str) or not (group == LANGUAGE_MODEL_KEY or group.count(".") == 1):
            raise RecipeError(f"names a (modality, role) group as `modality.role` (vision.tower, audio.projector) "
                              f"or `{LANGUAGE_MODEL_KEY}`; got {group!r}", source=source,
                              key=f"{SECTION}.{where}.{ROLE_KEY}")
        return RoleSelector(where=where, group=group)
    selector_part = {name: value for name, value in entry.items() if name not in RATE_KEYS}
    if kind == LAYERS_KEY:
        problems: list[str] = []
        found = parse_layer_range(selector_part, where, problems, section=SECTION)
        if found is None:
            at, _, message = problems[0].partition(": ")
            raise RecipeError(message, source=source, key=at)
        return found
    try:
        return parse_module_selector(selector_part, where, source=source, section=SECTION)
    except FreezeConfigError as error:
        raise RecipeError(error.message, source=source, key=error.key) from None
