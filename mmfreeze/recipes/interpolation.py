"""Resolve the simple `${dotted.key}` references a recipe uses for its model id.

Recipes are OmegaConf-style documents. Only references to other keys of the same document can be
resolved offline; resolvers such as `${oc.env:HF_HOME}` depend on the machine that trains, so a
value that needs one is reported, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mmfreeze.exceptions import RecipeError

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_MAX_DEPTH = 16


def resolve_references(value: str, document: Mapping[str, Any], *, source: str, key: str) -> str:
    """Replace every `${a.b}` in ``value`` with the document's value at ``a.b``."""
    for _ in range(_MAX_DEPTH):
        match = _REFERENCE.search(value)
        if match is None:
            return value
        replacement = _lookup(match.group(1).strip(), document, source=source, key=key)
        value = value[: match.start()] + str(replacement) + value[match.end() :]
    raise RecipeError(f"interpolation in {value!r} does not terminate (a cycle?)", source=source, key=key)


def _lookup(reference: str, document: Mapping[str, Any], *, source: str, key: str) -> Any:
    if ":" in reference:
        raise RecipeError(
            f"`${{{reference}}}` needs a resolver at training time and cannot be resolved offline; "
            "write the value directly or reference another key of this recipe (`${model_name}`)",
            source=source,
            key=key,
        )
    node: Any = document
    for part in reference.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise RecipeError(
                f"`${{{reference}}}` refers to a key this recipe does not have", source=source, key=key
            )
        node = node[part]
    if isinstance(node, (Mapping, list)):
        raise RecipeError(f"`${{{reference}}}` is not a scalar", source=source, key=key)
    return node
