"""The storage dtypes of a recipe's tensors, by name, with their element sizes.

nemo-automodel 0.7.0 reads dtype strings through ``nemo_automodel.shared.utils.dtype_from_str``
(``torch.bfloat16``, ``bfloat16``, ``bf16`` ..., case-insensitive); only floating dtypes are
trainable, so only those are accepted here.
"""

from __future__ import annotations

from typing import Any

from mmfreeze.memory.errors import UnknownDtypeError

ELEMENT_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}
"""Bytes per element of every dtype a trainable model may be stored in."""

_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "bf16": "bfloat16"}
"""``dtype_from_str``'s other names for the same dtypes."""


def parse_dtype(value: Any, *, source: str | None, key: str) -> str:
    """The canonical name (``bfloat16``) of a recipe's dtype string, as ``dtype_from_str`` reads it."""
    if not isinstance(value, str):
        raise UnknownDtypeError(f"a dtype name is needed (e.g. torch.bfloat16), got {value!r}",
                                source=source, key=key)
    name = value.lower().removeprefix("torch.")
    name = _ALIASES.get(name, name)
    if name not in ELEMENT_BYTES:
        raise UnknownDtypeError(f"{value!r} is not a floating dtype the framework trains in; one of "
                                f"{', '.join(sorted(ELEMENT_BYTES))}", source=source, key=key)
    return name
