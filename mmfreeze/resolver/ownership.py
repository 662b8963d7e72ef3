"""Who owns each parameter, and where each group's transformer layers are.

Ownership: a parameter belongs to the most specific owner path (multimodal module or language
part) containing any of its names. A tied parameter reachable under two owners therefore goes to
the deeper one; ties in depth go to the first declared owner.

Layer containers: a module whose children are numbered (``layers.0``, ``blocks.1``) and all of
classes whose names say layer or block (not a norm; hybrid stacks mix several such classes). The outermost such list counts; it belongs to
the group of the most specific owner containing it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence

from mmfreeze.resolver.canonical import CanonicalParameter, CanonicalStructure
from mmfreeze.resolver.paths import is_under

_LAYER_WORDS = ("layer", "block")


def assign_owners(parameters: Sequence[CanonicalParameter], owners: Sequence[str]) -> dict[str, str | None]:
    """Canonical parameter name -> owning path (``None`` when no owner contains it)."""
    ranked = sorted(owners, key=lambda path: -path.count(".") if path else 1)
    # Every name (aliases too) in sorted order, so the names under a path are one slice; owners
    # are applied worst first and a better one overwrites. This runs for every parameter of every
    # model (1e5 for a corpus with MoE models), so no name is tested against every owner.
    named = sorted((name, param.name) for param in parameters for name in param.names)
    names = [name for name, _ in named]
    owner: dict[str, str | None] = dict.fromkeys((param.name for param in parameters), None)
    for path in reversed(ranked):
        for start, stop in _spans_under(names, path):
            owner.update((param, path) for _, param in named[start:stop])
    return owner


def _spans_under(names: Sequence[str], path: str) -> list[tuple[int, int]]:
    """Index ranges of the sorted ``names`` that :func:`is_under` ``path`` accepts: ``path`` itself
    and the names starting with ``path + "."`` (all below ``path + "/"``, as ``/`` follows ``.``)."""
    if path == "":
        return [(0, len(names))]
    return [
        (bisect_left(names, path), bisect_right(names, path)),
        (bisect_left(names, path + "."), bisect_left(names, path + "/")),
    ]


def layer_containers(structure: CanonicalStructure, group_of_owner: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Group -> canonical paths of its outermost layer lists."""
    ranked = sorted(group_of_owner, key=lambda path: -path.count(".") if path else 1)
    found: dict[str, list[str]] = defaultdict(list)
    taken: list[str] = []
    for path in sorted(numbered_layer_lists(structure)):
        if any(is_under(path, outer) for outer in taken):
            continue
        owner = next((o for o in ranked if is_under(path, o)), None)
        if owner is not None:
            found[group_of_owner[owner]].append(path)
            taken.append(path)
    return {group: tuple(paths) for group, paths in found.items()}


def numbered_layer_lists(structure: CanonicalStructure) -> list[str]:
    """Canonical paths of every module whose numbered children all are layers (the one rule for a layer stack)."""
    children: dict[str, set[str]] = defaultdict(set)
    for path, class_name in structure.modules.items():
        parent, _, leaf = path.rpartition(".")
        if leaf.isdigit() and structure.identity[path] == path:
            children[parent].add(class_name)
    return [parent for parent, classes in children.items() if all(_is_layer(name) for name in classes)]


def _is_layer(class_name: str) -> bool:
    lowered = class_name.lower()
    return any(word in lowered for word in _LAYER_WORDS) and not lowered.endswith("norm")
