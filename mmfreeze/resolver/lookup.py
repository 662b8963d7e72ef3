"""Finding declared paths in a canonical structure, with errors that say what exists instead."""

from __future__ import annotations

from collections.abc import Iterable

from mmfreeze.exceptions import ResolverError
from mmfreeze.resolver.canonical import CanonicalStructure
from mmfreeze.suggest import closest_paths


def missing_path_error(structure: CanonicalStructure, tried: Iterable[str], *, key: str) -> ResolverError:
    tried = list(tried)
    existing = [p for p in structure.modules if p]
    close = [match for path in tried for match in closest_paths(path, existing, count=3)]
    hint = ", ".join(dict.fromkeys(close)) or "none similar"
    return ResolverError(
        f"no module at {' or '.join(repr(p) for p in tried)} in {structure.class_name}; "
        f"closest existing paths: {hint}",
        key=key,
    )


def first_existing(structure: CanonicalStructure, paths: tuple[str, ...]) -> str | None:
    """The first of ``paths`` that names a module, as the first path of that module object."""
    for path in paths:
        if path in structure.modules:
            return structure.identity[path]
    return None


def require_path(structure: CanonicalStructure, paths: tuple[str, ...], *, key: str) -> str:
    found = first_existing(structure, paths)
    if found is None:
        raise missing_path_error(structure, paths, key=key)
    return found
