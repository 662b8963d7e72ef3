"""A :class:`ModelStructure` seen through canonical paths (pure data, no torch).

Several raw paths can collapse to one canonical path (a wrapper and the module it wraps). The
canonical path then binds to the outermost raw path (the wrapper: it holds the same parameters and
is what FSDP and checkpointing act on) and takes its class name from the innermost one (the real
module, which the table and the heuristic recognise).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.paths import canonical_class_name, canonical_path, peft_root_prefix, strip_wrapper_segments


@dataclass(frozen=True, kw_only=True)
class CanonicalParameter:
    """One parameter tensor under canonical names; ``raw_name`` is what the live model calls it."""

    name: str
    aliases: tuple[str, ...]
    raw_name: str
    numel: int

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, kw_only=True)
class CanonicalStructure:
    """Module tree and parameters of one model under canonical paths."""

    class_name: str
    """Class of the user's model (inside every wrapper, ``FSDP`` prefix removed)."""
    modules: Mapping[str, str]
    """Canonical module path -> class name of the innermost module reached by it."""
    raw_module_paths: Mapping[str, str]
    """Canonical module path -> outermost raw path reaching it."""
    identity: Mapping[str, str]
    """Canonical module path -> first canonical path of the same module object (itself if first)."""
    parameters: tuple[CanonicalParameter, ...]

    @cached_property
    def raw_parameter_names(self) -> Mapping[str, str]:
        """Canonical parameter name (any alias) -> raw name of the live parameter."""
        return {name: param.raw_name for param in self.parameters for name in param.names}


def canonical_by_raw(raw_parameter_names: Mapping[str, str]) -> dict[str, str]:
    """Invert canonical name -> raw name (``raw_parameter_names`` of a structure or inventory):
    raw parameter name -> its canonical name (the first, for a tied parameter)."""
    canonical: dict[str, str] = {}
    for name, raw in raw_parameter_names.items():
        canonical.setdefault(raw, name)
    return canonical


def canonicalize(structure: ModelStructure) -> CanonicalStructure:
    """Strip wrapper and PEFT segments from every module path and parameter name."""
    unwrapped = {strip_wrapper_segments(raw): cls for raw, cls in structure.modules.items()}
    prefix = peft_root_prefix(unwrapped)
    modules: dict[str, str] = {}
    raw_paths: dict[str, str] = {}
    for raw, class_name in structure.modules.items():
        path = canonical_path(raw, peft_prefix=prefix)
        if path is None:
            continue
        raw_paths.setdefault(path, raw)
        modules[path] = canonical_class_name(class_name)
    return CanonicalStructure(
        class_name=modules.get("", canonical_class_name(structure.class_name)),
        modules=modules,
        raw_module_paths=raw_paths,
        identity=_identity(structure, modules, prefix),
        parameters=tuple(_parameters(structure, prefix)),
    )


def _identity(structure: ModelStructure, modules: Mapping[str, str], prefix: str | None) -> dict[str, str]:
    identity = {path: path for path in modules}
    for raw, first_raw in structure.module_aliases.items():
        path = canonical_path(raw, peft_prefix=prefix)
        first = canonical_path(first_raw, peft_prefix=prefix)
        if path is not None and first is not None and path != first:
            identity[path] = identity.get(first, first)
    return identity


def _parameters(structure: ModelStructure, prefix: str | None) -> Iterator[CanonicalParameter]:
    for info in structure.parameters:
        if prefix is None and not info.aliases:  # most parameters: one name, no PEFT root to drop
            name = strip_wrapper_segments(info.name)
            yield CanonicalParameter(name=name, aliases=(), raw_name=info.name, numel=info.numel)
            continue
        names = [canonical_path(raw, peft_prefix=prefix) for raw in info.names]
        kept = list(dict.fromkeys(name for name in names if name is not None))
        if kept:
            yield CanonicalParameter(name=kept[0], aliases=tuple(kept[1:]), raw_name=info.name, numel=info.numel)
