"""Module selectors, ``{path: X}`` and ``{glob: X}``: parsed, matched and explained in one place.

Both vocabularies use them: nemo-automodel 0.7's ``freeze_modules`` / ``unfreeze_modules``
(:mod:`mmfreeze.freeze.framework`) and the new vocabulary's ``modules`` / ``except``
(:mod:`mmfreeze.freeze.config`, which adds plain-string paths and layer ranges). So a selector
that is malformed, or matches nothing, is worded the same by ``snapshot``, ``explain`` and
``migrate``, whichever section it sits in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.keys import SECTION
from mmfreeze.suggest import closest_paths, did_you_mean, suggestion

MODULE_SELECTOR_KINDS = ("path", "glob")
MODULE_SELECTOR_SHAPES = "`{path: X}` (an exact module path) or `{glob: X}` (fnmatch, `*` crosses dots)"
GLOB_RULE = "globs match full canonical module paths (`*` crosses dots)"


@dataclass(frozen=True)
class ModuleSelector:
    """``{path: X}`` or ``{glob: X}``; ``where`` names it in errors (``freeze_modules[0]``)."""

    where: str
    path: str | None = None
    glob: str | None = None

    def matches(self, module_path: str) -> bool:
        if self.path is not None:
            return module_path == self.path
        return fnmatchcase(module_path, self.glob or "")

    def select(self, module_paths: Iterable[str], *, key: Callable[[str], str] = lambda path: path) -> list[str]:
        """The ``module_paths`` this selector matches, tested as ``key(path)``, in the given order."""
        return [path for path in module_paths if self.matches(key(path))]

    def describe(self) -> str:
        return f"path: {self.path}" if self.path is not None else f"glob: {self.glob}"


def parse_module_selector(
    item: Any, where: str, *, source: str | None = None,
    kinds: tuple[str, ...] = MODULE_SELECTOR_KINDS, shapes: str = MODULE_SELECTOR_SHAPES, section: str = SECTION,
) -> ModuleSelector:
    """``item`` (one list entry, ``where`` = ``freeze_modules[0]``) as a selector, or a
    :class:`FreezeConfigError` keyed by the entry (under ``section``). ``kinds`` and ``shapes`` are
    what the section accepts in all (the new vocabulary adds layer ranges), for the did-you-mean
    and the message."""
    if isinstance(item, Mapping) and len(item) == 1 and next(iter(item)) in MODULE_SELECTOR_KINDS:
        kind, value = next(iter(item.items()))
        if isinstance(value, str) and value.strip():
            return ModuleSelector(where=where, **{kind: value})
        raise FreezeConfigError(f"must be a non-empty string, got {value!r}", source=source, key=f"{section}.{where}.{kind}")
    unknown = [key for key in item if key not in kinds] if isinstance(item, Mapping) else []
    hint = "".join(did_you_mean(str(key), kinds) for key in unknown)
    raise FreezeConfigError(f"a selector is {shapes}; got {item!r}{hint}", source=source, key=f"{section}.{where}")


def unmatched(selector: ModuleSelector, *, matched_modules: int, module_paths: Iterable[str]) -> str:
    """Why ``selector`` selects no parameter, with the nearest of ``module_paths`` as the fix."""
    if matched_modules:
        return f"`{selector.describe()}` matches {matched_modules} module(s) but no parameter"
    if selector.path is not None:
        nearest = closest_paths(selector.path, module_paths, count=3, cutoff=0.5)
        hint = f"{suggestion(nearest[0])}; nearest module paths: {', '.join(nearest)}" if nearest else ""
        return f"`path: {selector.path}` matches no module of this model{hint}"
    return f"`glob: {selector.glob}` matches no module of this model{_glob_hint(selector.glob or '', module_paths)}; {GLOB_RULE}"


def literal_head(glob: str) -> str:
    """The text before a glob's first wildcard (``*``, ``?`` or ``[``): all of it when it has none."""
    return glob[: min((glob.find(c) for c in "*?[" if c in glob), default=len(glob))]


def _glob_hint(glob: str, module_paths: Iterable[str]) -> str:
    """The glob with its literal head replaced by the nearest real module path."""
    literal = literal_head(glob).rstrip(".")
    nearest = closest_paths(literal, module_paths, count=1, cutoff=0.6) if literal else []
    return suggestion(nearest[0] + glob[len(literal):]) if nearest else ""
