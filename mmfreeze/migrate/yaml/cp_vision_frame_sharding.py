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

from mmfreeze.distributed.legacy_keys import LEGACY_FRAME_SHARDING, NESTED_PATHS
from mmfreeze.migrate.rules import MF003
from mmfreeze.migrate.yaml.context import YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.nesting import move_key

RULE = MF003


def plan(context: YamlContext, edits: LineEdits) -> None:
    move_key(context, edits, "distributed", LEGACY_FRAME_SHARDING, NESTED_PATHS[LEGACY_FRAME_SHARDING])
