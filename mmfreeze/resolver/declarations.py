"""Turning a declaration (caller specs, class entry, table entry or heuristic) into specs.

Precedence, first that applies: specs given by the caller, the model class's own
``mmfreeze_architecture``, the central table keyed by class name, the leaf-name heuristic.
The language-model parts always come from the best available entry, whatever gave the specs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from mmfreeze.resolver.canonical import CanonicalStructure
from mmfreeze.resolver.entry import ArchitectureEntry
from mmfreeze.resolver.heuristic import guess_entry
from mmfreeze.resolver.lookup import first_existing, require_path
from mmfreeze.resolver.spec import MultimodalModuleSpec, SpecSource


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """The chosen entry, where it came from, and its specs bound to canonical paths."""

    entry: ArchitectureEntry
    entry_source: SpecSource
    """Where ``entry`` (and so the language-model parts) came from."""
    source: SpecSource
    """Where the specs came from (``caller`` when the caller gave them)."""
    specs: tuple[tuple[MultimodalModuleSpec, SpecSource], ...]


def select_declaration(
    structure: CanonicalStructure,
    *,
    declared_specs: Sequence[MultimodalModuleSpec],
    class_entry: ArchitectureEntry | None,
    table: Mapping[str, ArchitectureEntry],
) -> Declaration:
    entry, source = _select_entry(structure, class_entry, table)
    if declared_specs:
        specs = tuple((_bind_caller_spec(structure, spec), "caller") for spec in declared_specs)
        return Declaration(entry=entry, entry_source=source, source="caller", specs=specs)
    specs = tuple(_entry_specs(structure, entry, source))
    return Declaration(entry=entry, entry_source=source, source=source, specs=specs)


def _select_entry(
    structure: CanonicalStructure, class_entry: ArchitectureEntry | None, table: Mapping[str, ArchitectureEntry]
) -> tuple[ArchitectureEntry, SpecSource]:
    if class_entry is not None:
        return class_entry, "class"
    if structure.class_name in table:
        return table[structure.class_name], "table"
    return guess_entry(structure), "heuristic"


def _bind_caller_spec(structure: CanonicalStructure, spec: MultimodalModuleSpec) -> MultimodalModuleSpec:
    path = require_path(structure, (spec.path,), key="declared_specs")
    return replace(spec, path=path)


def _entry_specs(
    structure: CanonicalStructure, entry: ArchitectureEntry, source: SpecSource
) -> Iterator[tuple[MultimodalModuleSpec, SpecSource]]:
    for decl in entry.modules:
        key = f"{structure.class_name} modules"
        path = require_path(structure, decl.paths, key=key) if decl.required else first_existing(structure, decl.paths)
        if path is None:
            continue
        spec = MultimodalModuleSpec(
            path=path, modality=decl.modality, role=decl.role, conditionally_executed=decl.conditionally_executed
        )
        yield spec, source


def language_parts(structure: CanonicalStructure, entry: ArchitectureEntry) -> dict[str, str]:
    """Part name -> canonical path; repeated part names get ``.1``, ``.2`` suffixes."""
    parts: dict[str, str] = {}
    for part in entry.language_model:
        path = require_path(structure, part.paths, key=f"{structure.class_name} language_model")
        name = part.part
        suffix = 1
        while name in parts:
            name, suffix = f"{part.part}.{suffix}", suffix + 1
        parts[name] = path
    return parts
