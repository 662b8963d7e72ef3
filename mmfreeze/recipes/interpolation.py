"""Read `${...}` in a recipe value as nemo-automodel 0.7.0 reads it: an environment variable.

0.7.0's loader (``components/config/loader.py``, ``resolve_yaml_env_vars``) resolves every
``${VAR}``, ``${VAR,default}``, ``${oc.env:VAR}`` / ``${oc.env:VAR,default}`` and ``$VAR`` from
the training machine's environment; dots are part of the name, so ``${model_name}`` is the
environment variable ``model_name``, never the recipe key (OmegaConf's meaning, which 0.7.0 does
not have). A snapshot must not depend on the machine it is made on, so mmfreeze reads a value with
a default as its default (what a run without the variable trains) and refuses one without.
"""

from __future__ import annotations

import re

from mmfreeze.exceptions import RecipeError

_BRACED = re.compile(r"\$\{([^}]+)\}")
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
_RESOLVER = "oc.env:"


def resolve_references(value: str, *, source: str, key: str) -> str:
    """``value`` with every environment reference replaced by its default; a :class:`RecipeError`
    for one without a default, which only the training machine can resolve."""

    def default_of(match: re.Match[str]) -> str:
        expression = match.group(1).strip().removeprefix(_RESOLVER).strip()
        name, comma, default = expression.partition(",")
        if comma:
            return default.strip()
        raise RecipeError(
            f"`{match.group(0)}` is the environment variable {name.strip()!r} for nemo-automodel 0.7 (its loader "
            "reads every `${...}` from the environment, `${model_name}` included, never from another recipe "
            "key), so it cannot be resolved offline; write the value, or give a default: "
            f"`${{{name.strip()},<value>}}`", source=source, key=key)

    resolved = _BRACED.sub(default_of, value)
    bare = _BARE.search(resolved)
    if bare is not None:
        raise RecipeError(f"`{bare.group(0)}` is the environment variable {bare.group(1)!r} for nemo-automodel 0.7, "
                          "so it cannot be resolved offline; write the value", source=source, key=key)
    return resolved
