"""A recipe's source compiled for its framework release, and the check that keeps the two in step.

`migrate` writes, beside the reviewed source (:mod:`mmfreeze.recipes.compiled`), what nemo-automodel
0.7 runs with no mmfreeze at training time: `freeze_config` as 0.7's own selectors
(:mod:`mmfreeze.freeze.native`) and the rates as `param_group_overrides` patterns, each taking
exactly the trainable tensors its source entry groups. Both are proven with the release's rules
on the model the run built before they are returned. `snapshot --check` compiles the source again
and fails when the file holds anything else (:func:`check_compiled`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mmfreeze.exceptions import CompiledSectionError, NotNativelyExpressible
from mmfreeze.freeze.compile_target import CompileTarget, release_of
from mmfreeze.freeze.engine import FrozenSetResult, compute_frozen_set
from mmfreeze.freeze.native import compile_native_section, layer_merges
from mmfreeze.freeze.optimizer import PATTERN_KEY, OptimizerSection
from mmfreeze.freeze.param_groups import ParamGroups
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.compiled import COMPILED_FOR, SECTION, CompiledSections
from mmfreeze.boundary.releases import FrameworkRules
from mmfreeze.resolver.paths import name_prefixes

MIGRATE = "mmfreeze migrate"


def compile_sections(
    result: FrozenSetResult, built: ModelStructure, document: Mapping[str, Any], *, target: CompileTarget,
    source: str, optimizer: OptimizerSection | None = None, groups: ParamGroups | None = None,
) -> CompiledSections:
    """The sections 0.7 runs natively for ``result`` (the source's outcome on ``built``), proven with
    the release's rules on ``built`` before they are returned."""
    if target.release != "0.7":
        raise NotNativelyExpressible(f"nemo-automodel {target.release} has no module selectors to compile into; "
                                     "the recipe runs through mmfreeze's integration", source=source)
    native = compile_native_section(result.structure, result.frozen, lora=result.adapters is not None,
                                    source=source).as_section()
    proof = compute_frozen_set(built, {**document, "freeze_config": native}, source=source, override_specs=(),
                               rules=FrameworkRules(release="0.7"))
    if proof.frozen != result.frozen:
        differ = sorted(proof.frozen ^ result.frozen)
        raise NotNativelyExpressible(f"the compiled selectors do not freeze what the source does ({len(differ)} "
                                     f"tensors differ, first {differ[0]}); nothing written", source=source)
    rates = compile_rates(optimizer, groups, result.structure, source=source) if optimizer is not None else None
    return CompiledSections(freeze_config=native, param_group_overrides=rates, compiled_for=target.describe())


def compile_rates(
    optimizer: OptimizerSection, groups: ParamGroups | None, structure: ModelStructure, *, source: str,
) -> list[dict[str, Any]]:
    """The source's `param_group_overrides`, each selector entry as a pattern of exactly the tensors
    it groups: the outermost modules that hold nothing else, then single tensors."""
    taken: dict[int, set[str]] = {override.index: set() for override in optimizer.overrides}
    for name, override in (groups.group_of.items() if groups is not None else ()):
        taken[override.index].add(name)
    names = frozenset(info.name for info in structure.parameters)
    entries = []
    for override in optimizer.overrides:
        pattern = override.pattern if override.pattern is not None else \
            prefix_pattern(taken[override.index], names, source=f"{source}: {override.key}")
        entry: dict[str, Any] = {PATTERN_KEY: pattern, "lr_mult": override.lr_mult}
        if override.wd_mult != 1.0:
            entry["wd_mult"] = override.wd_mult
        entries.append(entry)
    return entries


def prefix_pattern(wanted: frozenset[str] | set[str], names: frozenset[str], *, source: str) -> str:
    """An anchored regex that ``re.search`` matches, among ``names``, on exactly ``wanted``: the
    outermost modules that hold nothing else, then single tensors; the same module of every layer
    as one alternative with ``\\d+`` for the layer index."""
    blocked = {prefix for name in names - set(wanted) for prefix in name_prefixes(name)}
    modules: dict[str, None] = {}
    for name in sorted(wanted):
        module = next((prefix for prefix in name_prefixes(name) if prefix != name and prefix not in blocked), None)
        modules[name if module is None else module] = None
    parts = _layer_alternatives(list(modules), wanted, names)
    pattern = "^" + ("|".join(parts) if len(parts) == 1 else f"(?:{'|'.join(parts)})")
    if _taken(pattern, names) != set(wanted):
        raise NotNativelyExpressible(f"no pattern of module prefixes takes exactly this entry's tensors ({pattern})",
                                     source=source)
    return pattern


def _layer_alternatives(paths: list[str], wanted: frozenset[str] | set[str], names: frozenset[str]) -> list[str]:
    """Each path as a regex alternative (a module: its prefix and a dot; a tensor: its whole name);
    paths that differ only in one layer index become one alternative when it takes no other tensor."""
    def alternative(path: str, escaped: str) -> str:
        return escaped + ("$" if path in names else r"\.")

    merged = layer_merges(paths, spell=lambda head, tail: re.escape(head) + r"\d+" + re.escape(tail),
                          accepts=lambda path, key, _: _taken("^" + alternative(path, key), names) <= set(wanted))
    return list(dict.fromkeys(alternative(path, re.escape(path) if key is None else key) for path, key in merged))


def _taken(pattern: str, names: Iterable[str]) -> set[str]:
    compiled = re.compile(pattern)
    return {name for name in names if compiled.search(name)}


def check_compiled(
    compiled: CompiledSections, expected: CompiledSections, *, target: CompileTarget, source: str,
) -> None:
    """``compiled`` (what the file holds) against ``expected`` (the source compiled here): a
    :class:`CompiledSectionError` that says what moved and the one command that fixes it.

    Compiled for another release: stale. Compiled for this environment (release, transformers and
    builder): it must be exactly what the source compiles to, or one of the two was edited. Compiled
    for the same release on another model tree (the framework's classes, another transformers): the
    paths are that tree's, and the environment ``compiled_for`` names checks them (``.ci/framework_env``)."""
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
    if not moved and _rate_of(compiled) != _rate_of(wanted):
        held, rates = _rate_of(compiled), _rate_of(wanted)
        differ = sorted(name for name in held.keys() | rates.keys() if held.get(name) != rates.get(name))
        moved, key = [f"the compiled patterns give {len(differ)} tensors another rate (first {differ[0]})"], \
            "optimizer.param_group_overrides"
    if moved:
        raise CompiledSectionError(
            f"out of step with its source under `{SECTION}:` on {target.describe()}: {'; '.join(moved)}. The stock "
            f"framework trains the compiled section: run `{MIGRATE}` to compile it again from the source "
            f"(`{MIGRATE} {source}`; edit the source first if the compiled edit was meant)", source=source, key=key)


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
