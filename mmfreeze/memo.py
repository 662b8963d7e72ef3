"""One memo for a command's per-key work, failures included (pure)."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

T = TypeVar("T")


def memoized(cache: MutableMapping[Any, Any], key: Any, compute: Callable[[], T],
             *, errors: tuple[type[Exception], ...] = ()) -> T:
    """``cache[key]``, computed on first use; a failure of one of ``errors`` is kept too and raised
    again, so a file that did not parse or a build that failed is not tried twice."""
    if key not in cache:
        try:
            cache[key] = compute()
        except errors as error:
            cache[key] = error
    found = cache[key]
    if isinstance(found, errors):
        raise found
    return found
