"""One way to print how much of a model something is: tensors and scalar parameters (pure)."""

from __future__ import annotations

_SCALES = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))
EXACT_BELOW = 10_000
"""Counts under this are printed exactly (``2,048``); larger ones to three digits (``3.34B``)."""


def readable_count(count: int) -> str:
    """``2,048``, ``12.3K``, ``67.9M``, ``3.34B``."""
    if count < EXACT_BELOW:
        return f"{count:,}"
    for scale, suffix in _SCALES:
        value = float(f"{count / scale:.3g}")  # rounded first: 999,999 is 1M, not 1000K
        if value >= 1:
            return f"{value:g}{suffix}"
    return f"{count:,}"


def plural(count: int, noun: str) -> str:
    """``1 tensor``, ``1,240 tensors``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def tensor_text(tensors: int) -> str:
    return plural(tensors, "tensor")


def count_text(tensors: int, parameters: int) -> str:
    """``1 tensor / 2,048 parameters``, ``12 tensors / 3.34B parameters``."""
    return f"{tensor_text(tensors)} / {readable_count(parameters)} parameters"


def readable_bytes(count: int) -> str:
    """``535 MB``, ``12.3 GB``, ``812 B``: decimal units, three digits, as a change is read."""
    for scale, unit in ((10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "kB")):
        if abs(count) >= scale:
            return f"{float(f'{count / scale:.3g}'):g} {unit}"
    return f"{count:,} B"
