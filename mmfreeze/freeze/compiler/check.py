"""The check that keeps a recipe's compiled sections and its source in step (`snapshot --check`):
in the environment ``compiled_for`` names, exactly what the source compiles to; in every
environment, the same frozen set and rates on the class it builds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from mmfreeze.exceptions import CompiledSectionError
from mmfreeze.freeze.compiler.target import CompileTarget, release_of
from mmfreeze.freeze.engine import FrozenSetResult
from mmfreeze.recipes.layout import COMPILED_FOR, SECTION, CompiledSections

MIGRATE = "mmfreeze migrate"


def check_compiled(
    compiled: CompiledSections, expected: CompiledSections, *, target: CompileTarget, source: str,
) -> None:
    """``compiled`` (what the file holds) against ``expected`` (the source compiled here): a
    :class:`CompiledSectionError` that says what moved and the one command that fixes it.

    Compiled for another release: stale. Compiled for this environment (release, transformers and
    builder): it must be exactly what the source compiles to, or one of the two was edited. Compiled
    for the same release on another model tree (the framework's classes, another transformers): the
    paths are that tree's, so what they train here is compared instead (:func:`check_compiled_trains`),
    where this environment can name that tree's tensors."""
    if release_of(compiled.compiled_for) != release_of(target.describe()):
        raise CompiledSectionError(
            f"compiled for {compiled.compiled_for or 'an unnamed environment'}, but the repository trains on "
            f"nemo-automodel {target.release}: stale; run `{MIGRATE}` to compile the source for it",
            source=source, key=f"{SECTION}.{COMPILED_FOR}")
    if compiled.compiled_for != expected.compiled_for:
        return
    for key, held, wanted in (
        ("freeze_config", compiled.freeze_config, expected.freeze_config),
        ("optimizer.param_group_overrides", compiled.param_group_overrides, expected.param_group_overrides),
    ):
        if _plain(held) != _plain(wanted):
            raise CompiledSectionError(
                f"not what `{SECTION}:` compiles to on {target.describe()} (one of them was edited): it compiles "
                f"to {_plain(wanted)!r}; edit the source under `{SECTION}:` and run `{MIGRATE}`",
                source=source, key=key)


def check_compiled_trains(compiled: FrozenSetResult, wanted: FrozenSetResult, *, target: CompileTarget, source: str) -> None:
    """What the compiled sections train on this environment's class (``compiled``) against what the
    source trains there (``wanted``), in every environment, whatever ``compiled_for`` names: a
    :class:`CompiledSectionError` that says which way the compiled side moved, and the fix."""
    trains_more = sorted(wanted.frozen - compiled.frozen)
    freezes_more = sorted(compiled.frozen - wanted.frozen)
    moved = [f"the compiled `freeze_config` {verb} {len(names)} tensors the source {other} (first {names[0]})"
             for verb, names, other in (("trains", trains_more, "freezes"), ("freezes", freezes_more, "trains"))
             if names]
    key = "freeze_config"
    held, rates = _rate_of(compiled), _rate_of(wanted)
    if not moved and held != rates:
        differ = sorted(name for name in held.keys() | rates.keys() if held.get(name) != rates.get(name))
        moved, key = [f"the compiled patterns give {len(differ)} tensors another rate (first {differ[0]})"], \
            "optimizer.param_group_overrides"
    if moved:
        raise CompiledSectionError(
            f"out of step with its source under `{SECTION}:` on {target.describe()}: {'; '.join(moved)}. The stock "
            f"framework trains the compiled section: run `{MIGRATE}` to compile it again from the source "
            f"(`{MIGRATE} {source}`; edit the source first if the compiled edit was meant)", source=source, key=key)


def unreachable_here(compiled: CompiledSections, *, target: CompileTarget, source: str) -> NoReturn:
    """The compiled sections name a model tree this environment neither builds nor can name (their
    selectors match nothing on its class, even through its release's conversion mapping, and
    neither a snapshot made where they were compiled nor mmfreeze's record of the framework's
    classes gives that tree's names): a :class:`CompiledSectionError` that says where they can be
    held to their source, never a skip."""
    raise CompiledSectionError(
        f"cannot be held to its source here: it was compiled on the model tree of {compiled.compiled_for}, which "
        f"this environment ({target.describe()}) does not build, and nothing here records that tree's tensor names "
        f"(neither this recipe's snapshot nor mmfreeze's record of the framework's classes). Check it where it "
        f"was compiled, or run `mmfreeze snapshot --update {source}` there and commit that snapshot: it records "
        f"the names this check needs", source=source, key=f"{SECTION}.{COMPILED_FOR}")


def _rate_of(result: FrozenSetResult) -> dict[str, tuple[float, float]]:
    return {name: rate for rate, names in result.rates.items() for name in names}


def _plain(value: Any) -> Any:
    """YAML data without ruamel's types or float spellings (``10.0`` and ``10`` are one rate)."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return float(value)
