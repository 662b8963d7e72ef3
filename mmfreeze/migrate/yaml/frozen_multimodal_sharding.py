"""MF002 frozen-multimodal-sharding: the legacy flat key moves into `distributed.multimodal`.

Before::

    distributed:
      frozen_multimodal_sharding: per_layer   # cut peak memory

After::

    distributed:
      multimodal:
        frozen_sharding: per_layer   # cut peak memory

An already nested `distributed.multimodal.frozen_sharding` is left alone; both at once is reported.
"""

from __future__ import annotations

from mmfreeze.distributed.legacy_keys import LEGACY_FROZEN_SHARDING
from mmfreeze.migrate.rules import MF002
from mmfreeze.migrate.yaml.nesting import LegacyKeyMove


class FrozenMultimodalSharding(LegacyKeyMove):
    rule = MF002
    legacy = LEGACY_FROZEN_SHARDING
