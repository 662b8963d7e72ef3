"""Pure resolution: a :class:`ModelStructure` in, a :class:`ResolvedInventory` out (no torch).

Order: canonicalise paths; pick the declaration (caller, class, table, heuristic); apply
overrides; drop aliases of the same module object; drop children that repeat their parent's
modality and role; give every parameter to the most specific owner; find layer lists per group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.canonical import CanonicalStructure, canonicalize
from mmfreeze.resolver.declarations import Declaration, language_parts, select_declaration
from mmfreeze.resolver.entry import ArchitectureEntry, LanguagePart, ModuleDecl, Unowned
from mmfreeze.resolver.heuristic import warn_guessed
from mmfreeze.resolver.inventory import (
    LANGUAGE_GROUP,
    ResolvedInventory,
    ResolvedLanguageModel,
    ResolvedModuleInfo,
)
from mmfreeze.resolver.normalize import SourcedSpec, apply_overrides, dedupe_aliases, drop_redundant_children
from mmfreeze.resolver.ownership import assign_owners, layer_containers
from mmfreeze.resolver.paths import is_under
from mmfreeze.resolver.spec import MultimodalModuleSpec, SpecSource

_Owned = Mapping[str | None, list[str]]
_Numel = Mapping[str, int]


def resolve_structure(
    structure: ModelStructure,
    *,
    declared_specs: Sequence[MultimodalModuleSpec] = (),
    override_specs: Sequence[MultimodalModuleSpec] = (),
    class_entry: ArchitectureEntry | None = None,
    table: Mapping[str, ArchitectureEntry] | None = None,
    warn_guess: bool = True,
) -> ResolvedInventory:
    """Resolve multimodal modules, language model and parameter ownership on pure data.

    ``class_entry`` is the model class's own declaration (the live wrapper reads it from the
    class attribute ``mmfreeze_architecture``, since a structure has only class names);
    ``table`` defaults to the central :data:`ARCHITECTURE_TABLE`. ``warn_guess=False`` skips the
    heuristic's log line, for callers (report labels) to whom a guessed inventory is good enough.
    """
    from mmfreeze.resolver.table import ARCHITECTURE_TABLE

    if structure.parts and class_entry is None:
        class_entry = _composite_entry(structure, table=table, warn_guess=warn_guess)
    canonical = canonicalize(structure)
    declaration = select_declaration(
        canonical,
        declared_specs=declared_specs,
        class_entry=class_entry,
        table=ARCHITECTURE_TABLE if table is None else table,
    )
    if warn_guess and declaration.entry_source == "heuristic":
        warn_guessed(canonical.class_name, declaration.entry)
    specs = apply_overrides(canonical, declaration.specs, override_specs)
    specs = drop_redundant_children(dedupe_aliases(specs))
    return _inventory(canonical, declaration, specs)


def _composite_entry(
    structure: ModelStructure, *, table: Mapping[str, ArchitectureEntry] | None, warn_guess: bool
) -> ArchitectureEntry:
    """A composite's entry: each part resolved as a model of its own, under its prefix."""
    modules: list[ModuleDecl] = []
    language: list[LanguagePart] = []
    unowned: list[Unowned] = []
    for part in structure.parts:
        inventory = resolve_structure(structure.part(part), table=table, warn_guess=warn_guess)
        head = f"{part.prefix}."
        modules += [ModuleDecl(paths=(head + info.spec.path,), modality=info.spec.modality, role=info.spec.role,
                               conditionally_executed=info.spec.conditionally_executed) for info in inventory.modules]
        language += [LanguagePart(paths=(head + path,), part=name.split(".")[0])
                     for name, path in inventory.language_model.parts.items()]
        unowned += [Unowned(path=head + name, reason=reason) for name, reason in inventory.unowned_reasons.items()]
    return ArchitectureEntry(modules=tuple(modules), language_model=tuple(language), unowned=tuple(unowned))


def _inventory(canonical: CanonicalStructure, declaration: Declaration, specs: list[SourcedSpec]) -> ResolvedInventory:
    parts = language_parts(canonical, declaration.entry)
    owner_paths = [spec.path for spec, _ in specs] + [p for p in parts.values() if p not in {s.path for s, _ in specs}]
    owners = assign_owners(canonical.parameters, owner_paths)
    owned: dict[str | None, list[str]] = {}
    for name, owner in owners.items():
        owned.setdefault(owner, []).append(name)
    numel = {param.name: param.numel for param in canonical.parameters}
    unowned = tuple(owned.get(None, ()))
    groups = {spec.path: spec.modality for spec, _ in specs} | {p: LANGUAGE_GROUP for p in parts.values()}
    return ResolvedInventory(
        class_name=canonical.class_name,
        source=declaration.source,
        modules=tuple(_module_info(canonical, spec, source, owned, numel) for spec, source in specs),
        language_model=_language_model(canonical, parts, owned, numel),
        unowned=unowned,
        unowned_reasons=_unowned_reasons(canonical, declaration.entry, unowned),
        layer_containers=layer_containers(canonical, groups),
        raw_parameter_names=canonical.raw_parameter_names,
        raw_module_paths=canonical.raw_module_paths,
    )


def _module_info(
    canonical: CanonicalStructure, spec: MultimodalModuleSpec, source: SpecSource, owned: _Owned, numel: _Numel
) -> ResolvedModuleInfo:
    names = tuple(owned.get(spec.path, ()))
    return ResolvedModuleInfo(
        spec=spec,
        source=source,
        raw_path=canonical.raw_module_paths[spec.path],
        module_class=canonical.modules[spec.path],
        parameters=names,
        numel=sum(numel[name] for name in names),
    )


def _language_model(
    canonical: CanonicalStructure, parts: Mapping[str, str], owned: _Owned, numel: _Numel
) -> ResolvedLanguageModel:
    names = tuple(name for path in dict.fromkeys(parts.values()) for name in owned.get(path, ()))
    return ResolvedLanguageModel(
        parts=parts,
        tied_lm_head=_is_tied(canonical, parts.get("lm_head")),
        parameters=names,
        numel=sum(numel[name] for name in names),
    )


def _is_tied(canonical: CanonicalStructure, lm_head: str | None) -> bool:
    if lm_head is None:
        return False
    return any(
        any(is_under(name, lm_head) for name in param.names) and not all(is_under(n, lm_head) for n in param.names)
        for param in canonical.parameters
    )


def _unowned_reasons(canonical: CanonicalStructure, entry: ArchitectureEntry, unowned: Sequence[str]) -> dict[str, str]:
    aliases = {param.name: param.names for param in canonical.parameters}
    reasons = {}
    for name in unowned:
        declared = next((u for u in entry.unowned if any(is_under(n, u.path) for n in aliases[name])), None)
        if declared is not None:
            reasons[name] = declared.reason
    return reasons
