"""Overrides, alias deduplication and the parent/child rule, applied to bound specs in order."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from mmfreeze.exceptions import ResolverError
from mmfreeze.resolver.canonical import CanonicalStructure
from mmfreeze.resolver.lookup import require_path
from mmfreeze.resolver.paths import is_under
from mmfreeze.resolver.spec import MultimodalModuleSpec, SpecSource

logger = logging.getLogger(__name__)

SourcedSpec = tuple[MultimodalModuleSpec, SpecSource]


def apply_overrides(
    structure: CanonicalStructure, specs: Sequence[SourcedSpec], overrides: Sequence[MultimodalModuleSpec]
) -> list[SourcedSpec]:
    """Each override replaces the spec for the same module (by identity) or is added.

    An override path must name a module; two overrides for one module are an error.
    """
    result = list(specs)
    seen: dict[str, str] = {}
    for override in overrides:
        path = require_path(structure, (override.path,), key="override_specs")
        if path in seen:
            raise ResolverError(
                f"two overrides for module {path!r}: {seen[path]!r} and {override.path!r}", key="override_specs"
            )
        seen[path] = override.path
        bound = (replace(override, path=path), "override")
        index = next((i for i, (spec, _) in enumerate(result) if spec.path == path), None)
        if index is None:
            result.append(bound)
        else:
            result[index] = bound
    return result


def dedupe_aliases(specs: Sequence[SourcedSpec]) -> list[SourcedSpec]:
    """Keep the first spec per module object (paths are already the first path of their object)."""
    kept: dict[str, SourcedSpec] = {}
    for spec, source in specs:
        if spec.path in kept:
            logger.debug("dropping %s: same module as an earlier spec", spec)
            continue
        kept[spec.path] = (spec, source)
    return list(kept.values())


def drop_redundant_children(specs: Sequence[SourcedSpec]) -> list[SourcedSpec]:
    """Drop a spec inside another spec of the same modality and role; keep a child whose role
    differs (Qwen-style ``visual.merger``, a projector inside the tower ``visual``)."""
    kept = []
    for spec, source in specs:
        redundant = any(
            other.path != spec.path
            and is_under(spec.path, other.path)
            and (other.modality, other.role) == (spec.modality, spec.role)
            for other, _ in specs
        )
        if redundant:
            logger.debug("dropping %s: inside %s with the same modality and role", spec.path, spec.role)
            continue
        kept.append((spec, source))
    return kept
