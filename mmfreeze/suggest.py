"""Did-you-mean: how every error proposes the closest valid name (pure, a foundation module)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest_paths(path: str, paths: Iterable[str], *, count: int = 5, cutoff: float = 0.4) -> list[str]:
    """The ``paths`` (module paths, keys, names) most similar to ``path`` (difflib), best first."""
    return difflib.get_close_matches(path, [str(p) for p in paths], n=count, cutoff=cutoff)


def did_you_mean(value: str, options: Iterable[str], *, cutoff: float = 0.6) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options``, or an empty string."""
    match = closest_paths(value, options, count=1, cutoff=cutoff)
    return suggestion(match[0]) if match else ""


def suggestion(option: str) -> str:
    """`` (did you mean 'x'?)``: how every message proposes a correction."""
    return f" (did you mean {option!r}?)"
