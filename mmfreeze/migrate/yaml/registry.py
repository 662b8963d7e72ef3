"""The YAML rules in the order they run (see :mod:`mmfreeze.migrate.rules` for why this order)."""

from __future__ import annotations

from collections.abc import Callable

from mmfreeze.migrate.rules import Rule
from mmfreeze.migrate.yaml import (
    cp_vision_frame_sharding, freeze_config, frozen_multimodal_sharding, native_compile, rates, release_renames,
)
from mmfreeze.migrate.yaml.context import YamlContext

YamlTransform = Callable[[str, YamlContext], str]

YAML_TRANSFORMS: tuple[tuple[Rule, YamlTransform], ...] = (
    (release_renames.RULE, release_renames.rewrite),
    (freeze_config.RULE, freeze_config.rewrite),
    (frozen_multimodal_sharding.RULE, frozen_multimodal_sharding.rewrite),
    (cp_vision_frame_sharding.RULE, cp_vision_frame_sharding.rewrite),
    (rates.RULE, rates.rewrite),
    (native_compile.RULE, native_compile.rewrite),
)
