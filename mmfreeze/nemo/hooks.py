"""The framework's functions the integration replaces, resolved all at once or not at all.

A hook point (:mod:`mmfreeze.boundary.hook_points`: which, and why) is one attribute of one
framework module or class. ``install`` resolves every point
and checks the framework still calls through it before it replaces any, so a release that moved
one fails with the list of what is missing and nothing half-installed.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mmfreeze.boundary.hook_points import HookPoint
from mmfreeze.exceptions import IntegrationError


@dataclass(frozen=True)
class Patch:
    """One replaced attribute: where, the framework's original, and what replaced it."""

    point: HookPoint
    owner: Any
    name: str
    original: Any
    replacement: Any


def resolve(point: HookPoint) -> tuple[Any, str, Any]:
    """``(owner, name, current value)`` of a hook point; raises ``LookupError`` saying what is missing."""
    try:
        owner: Any = importlib.import_module(point.module)
    except ImportError as error:
        raise LookupError(f"{point.module} does not import ({error})") from error
    *path, name = point.attribute.split(".")
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            raise LookupError(f"{point.describe()}: no {part}")
    if name not in vars(owner):
        raise LookupError(f"{point.describe()}: no {name}")
    for caller_module, caller, used in point.used_by:
        function: Any = importlib.import_module(caller_module)
        for part in caller.split("."):
            function = getattr(function, part, None)
        # A caller that is itself a hook point may be replaced already: read the framework's own.
        code = getattr(inspect.unwrap(function) if callable(function) else function, "__code__", None)
        if code is None or used not in code.co_names:
            raise LookupError(f"{caller_module}.{caller} no longer uses {used}")
    return owner, name, vars(owner)[name]


def apply_patches(replacements: Iterable[tuple[HookPoint, Callable[[Any], Any]]]) -> tuple[Patch, ...]:
    """Resolve every point, then replace each with ``make(original)``; all or nothing."""
    replacements = list(replacements)
    resolved, missing = [], []
    for point, make in replacements:
        try:
            resolved.append((point, make, *resolve(point)))
        except LookupError as error:
            missing.append(f"{point.describe()} ({point.why}): {error}")
    if missing:
        raise IntegrationError(
            "the installed nemo-automodel lacks hook points the integration needs; nothing was patched:\n  - "
            + "\n  - ".join(missing), key="mmfreeze.nemo")
    patches = tuple(Patch(point, owner, name, original, make(original)) for point, make, owner, name, original in resolved)
    for patch in patches:
        setattr(patch.owner, patch.name, patch.replacement)
    return patches


def remove_patches(patches: Iterable[Patch]) -> None:
    """Put the framework's originals back, last patched first."""
    for patch in reversed(tuple(patches)):
        setattr(patch.owner, patch.name, patch.original)
