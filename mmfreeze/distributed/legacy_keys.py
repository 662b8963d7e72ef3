"""Read the legacy distributed keys as the nested `distributed.multimodal` policy they became.

`distributed.frozen_multimodal_sharding` is now `distributed.multimodal.frozen_sharding` and
`distributed.cp_vision_frame_sharding` is `distributed.multimodal.vision.frame_sharding`.
`mmfreeze migrate` rewrites the files; this lets an unmigrated recipe be planned meanwhile. A
nested key that is already set wins over its legacy spelling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LEGACY_FROZEN_SHARDING = "frozen_multimodal_sharding"
LEGACY_FRAME_SHARDING = "cp_vision_frame_sharding"
NESTED_PATHS: dict[str, tuple[str, ...]] = {
    LEGACY_FROZEN_SHARDING: ("multimodal", "frozen_sharding"),
    LEGACY_FRAME_SHARDING: ("multimodal", "vision", "frame_sharding"),
}
"""Each legacy key under `distributed:` and where it lives now (the one list: reading, migrating, checking)."""


def multimodal_section(distributed: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The effective `distributed.multimodal` mapping and a note per legacy key read."""
    distributed = distributed if isinstance(distributed, Mapping) else {}
    nested = distributed.get("multimodal")
    section: dict[str, Any] = dict(nested) if isinstance(nested, Mapping) else {}
    notes: list[str] = []
    for legacy, path in NESTED_PATHS.items():
        if legacy not in distributed:
            continue
        node = section
        for key in path[1:-1]:  # copied on the way down: the recipe's own mappings stay as read
            node[key] = dict(node.get(key) or {})
            node = node[key]
        node.setdefault(path[-1], distributed[legacy])
        notes.append(f"read legacy distributed.{legacy} as distributed.{'.'.join(path)}")
    return section, tuple(notes)
