"""Finding declared paths in a canonical structure, with errors that say what exists instead."""

from __future__ import annotations

from mmfreeze.exceptions import ResolverError
from mmfreeze.resolver.canonical import CanonicalStructure
from mmfreeze.suggest import closest_paths


def first_existing(structure: CanonicalStructure, paths: tuple[str, ...]) -> str | None:
    """The first of ``paths`` that names a module, as the first path of that module object."""
    return next((structure.identity[path] for path in paths if path in structure.modules), None)


def require_path(structure: CanonicalStructure, paths: tuple[str, ...], *, key: str) -> str:
    found = first_existing(structure, paths)
    if found is None:
        existing = [p for p in structure.modules if p]
        close = [match for path in paths for match in closest_paths(path, existing, count=3)]
        hint = ", ".join(dict.fromkeys(close)) or "none similar"
        raise ResolverError(
            f"no module at {' or '.join(repr(p) for p in paths)} in {structure.class_name}; "
            f"closest existing paths: {hint}",
            key=key,
        )
    return found
