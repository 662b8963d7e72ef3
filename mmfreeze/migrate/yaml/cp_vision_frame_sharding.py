"""MF003 cp-vision-frame-sharding: the legacy flat key moves to `distributed.multimodal.vision.frame_sharding`.

Before::

    distributed:
      cp_vision_frame_sharding:
        enabled: true
        min_tokens: 4096

After::

    distributed:
      multimodal:
        vision:
          frame_sharding:
            enabled: true
            min_tokens: 4096

The value moves as written (re-indented). An existing `multimodal` (or `multimodal.vision`) block
gets the key appended; an existing `frame_sharding` next to the legacy key is reported.
"""

from __future__ import annotations

from mmfreeze.distributed.legacy_keys import LEGACY_FRAME_SHARDING
from mmfreeze.migrate.rules import MF003
from mmfreeze.migrate.yaml.nesting import LegacyKeyMove


class CpVisionFrameSharding(LegacyKeyMove):
    rule = MF003
    legacy = LEGACY_FRAME_SHARDING
