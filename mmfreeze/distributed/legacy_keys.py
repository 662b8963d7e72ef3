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


def multimodal_section(distributed: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The effective `distributed.multimodal` mapping and a note per legacy key read."""
    distributed = distributed if isinstance(distributed, Mapping) else {}
    nested = distributed.get("multimodal")
    section: dict[str, Any] = dict(nested) if isinstance(nested, Mapping) else {}
    notes: list[str] = []
    if LEGACY_FROZEN_SHARDING in distributed:
        section.setdefault("frozen_sharding", distributed[LEGACY_FROZEN_SHARDING])
        notes.append(f"read legacy distributed.{LEGACY_FROZEN_SHARDING} as distributed.multimodal.frozen_sharding")
    if LEGACY_FRAME_SHARDING in distributed:
        vision = dict(section.get("vision") or {})
        vision.setdefault("frame_sharding", distributed[LEGACY_FRAME_SHARDING])
        section["vision"] = vision
        notes.append(f"read legacy distributed.{LEGACY_FRAME_SHARDING} as distributed.multimodal.vision.frame_sharding")
    return section, tuple(notes)
