"""Which models a Python call site receives: the ``# mmfreeze:`` pragma that binds it.

A call site names no model, so a rewrite can only be proven on models the user binds it to::

    # mmfreeze: models=Qwen/Qwen2-VL-2B-Instruct,llava-hf/llava-1.5-7b-hf
    apply_parameter_freezing(model, {"freeze_language_model": True})

    apply_parameter_freezing(model, {})  # mmfreeze: recipes=../vlm_finetune/qwen2_vl/qwen2_vl_2b_cord_v2.yaml

The pragma stands in a comment on the call's first line or on the comment lines directly above
it. ``models=`` takes model ids (or local directories holding ``config.json``), found as a recipe's
model is (local directory, bundled registry, Hugging Face cache); ``recipes=`` takes recipe files,
relative to the Python file, whose model, `peft:` and `multimodal` overrides are used as they are.
Both may stand in one pragma, separated by spaces or ``;``.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass

from mmfreeze.suggest import did_you_mean

PRAGMA = re.compile(r"^#\s*mmfreeze:\s*(?P<body>.*)$")
BINDING_KEYS = ("models", "recipes")


@dataclass(frozen=True, kw_only=True)
class Binding:
    """The models one call site is bound to, or why its pragma could not be read."""

    line: int
    """Line of the pragma."""
    models: tuple[str, ...] = ()
    recipes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.models, *self.recipes)


def find_pragmas(text: str) -> dict[int, Binding]:
    """Line -> the binding its ``# mmfreeze:`` comment states (a file that does not tokenize has none)."""
    found = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            match = PRAGMA.match(token.string) if token.type == tokenize.COMMENT else None
            if match is not None:
                found[token.start[0]] = parse_pragma(match.group("body"), line=token.start[0])
    except (tokenize.TokenError, SyntaxError):
        return {}
    return found


def parse_pragma(body: str, *, line: int) -> Binding:
    values: dict[str, tuple[str, ...]] = {}
    for part in re.split(r"[\s;]+", body.strip()):
        key, sep, value = part.partition("=")
        if not part:
            continue
        if not sep or key not in BINDING_KEYS or not value:
            hint = did_you_mean(key, BINDING_KEYS)
            return Binding(line=line, error=f"cannot read the pragma part {part!r}{hint}; write "
                                            "`# mmfreeze: models=<model id>,...` or `# mmfreeze: recipes=<recipe.yaml>,...`")
        values[key] = (*values.get(key, ()), *(item for item in value.split(",") if item))
    return Binding(line=line, models=values.get("models", ()), recipes=values.get("recipes", ()))


def binding_for(pragmas: Mapping[int, Binding], lines: list[str], first: int, last: int) -> Binding | None:
    """The pragma on the call's lines ``first``..``last`` (1-based), or on the comment lines just above."""
    for line in range(first, last + 1):
        if line in pragmas:
            return pragmas[line]
    line = first - 1
    while line >= 1 and lines[line - 1].strip().startswith("#"):
        if line in pragmas:
            return pragmas[line]
        line -= 1
    return None
