"""The recipe's `optimizer` section, as far as it decides the rate each tensor trains at (pure).

nemo-automodel 0.7.0 reads ``optimizer.param_group_overrides`` (``components/optim/optimizer.py``):
a list of ``{pattern, lr_mult, wd_mult}``, each pattern a Python regex matched with ``re.search``
against the canonical parameter name; the first matching entry takes a trainable tensor, the rest
stay in the default group. ``ParamGroupOverride(**entry)`` is all the validation it does, so a
pattern that does not compile, or a multiplier that is not a number, fails later, at the first
optimizer step. Here both are input errors that name the entry.

Dion-family optimizers (Dion, Dion2, Muon, NorMuon) group parameters themselves and ignore the
overrides with a warning (``components/optim/dion.py``, ``is_dion_optimizer``: a class whose module
starts with ``dion`` or whose name is one of those four).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import RecipeError
from mmfreeze.suggest import did_you_mean

SECTION = "optimizer"
OVERRIDES = "param_group_overrides"
OVERRIDE_KEYS = ("pattern", "lr_mult", "wd_mult")
DION_NAMES = frozenset({"Dion", "Dion2", "Muon", "NorMuon"})
"""The class names ``is_dion_optimizer`` recognises; their typed configs (``MuonConfig``, ...) too."""


@dataclass(frozen=True, kw_only=True)
class GroupOverride:
    """One ``param_group_overrides`` entry; ``index`` is its place in the list (earlier wins)."""

    index: int
    pattern: str
    lr_mult: float = 1.0
    wd_mult: float = 1.0

    @property
    def key(self) -> str:
        return f"{SECTION}.{OVERRIDES}[{self.index}]"

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    def describe(self) -> str:
        return f"{self.key} (pattern {self.pattern!r}, lr_mult {self.lr_mult:g}, wd_mult {self.wd_mult:g})"


@dataclass(frozen=True, kw_only=True)
class OptimizerSection:
    """What the recipe's optimizer does with parameter groups."""

    target: str
    """The `_target_` as written (never imported), ``""`` without one."""
    overrides: tuple[GroupOverride, ...] = ()

    @property
    def ignores_overrides(self) -> bool:
        """A Dion-family optimizer, which does its own grouping."""
        module, _, name = self.target.rpartition(".")
        return module.split(".")[0] == "dion" or name in DION_NAMES or name.removesuffix("Config") in DION_NAMES


def grouping_material(document: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the optimizer section that decides the groups: what a cached result depends on."""
    section = document.get(SECTION)
    if not isinstance(section, Mapping):
        return {}
    return {key: section.get(key) for key in ("_target_", OVERRIDES)}


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
        raise RecipeError(f"must be a list of {{pattern, lr_mult, wd_mult}} entries, got {entries!r}",
                          source=source, key=f"{SECTION}.{OVERRIDES}")
    target = section.get("_target_")
    return OptimizerSection(target=target if isinstance(target, str) else "",
                            overrides=tuple(_override(index, entry, source) for index, entry in enumerate(entries)))


def _override(index: int, entry: Any, source: str | None) -> GroupOverride:
    key = f"{SECTION}.{OVERRIDES}[{index}]"
    if not isinstance(entry, Mapping) or "pattern" not in entry:
        raise RecipeError(f"an entry is {{pattern: <regex>, lr_mult: <number>, wd_mult: <number>}}, got {entry!r}",
                          source=source, key=key)
    for name in entry:
        if name not in OVERRIDE_KEYS:
            raise RecipeError(f"unknown key {name!r}{did_you_mean(str(name), OVERRIDE_KEYS)}; nemo-automodel's "
                              f"ParamGroupOverride takes {', '.join(OVERRIDE_KEYS)}", source=source, key=f"{key}.{name}")
    pattern = entry["pattern"]
    if not isinstance(pattern, str) or not pattern:
        raise RecipeError(f"must be a non-empty regex string, got {pattern!r}", source=source, key=f"{key}.pattern")
    try:
        re.compile(pattern)
    except re.error as error:
        raise RecipeError(f"{pattern!r} is not a Python regex ({error}); it is matched with re.search against "
                          "parameter names", source=source, key=f"{key}.pattern") from None
    multipliers = {}
    for name in ("lr_mult", "wd_mult"):
        value = entry.get(name, 1.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise RecipeError(f"must be a non-negative number, got {value!r}", source=source, key=f"{key}.{name}")
        multipliers[name] = float(value)
    return GroupOverride(index=index, pattern=pattern, **multipliers)
