"""The YAML rules, run in :data:`mmfreeze.migrate.rules.RULES` order (the one place the order and
its reasons are stated), on one parse of the file: each plans line edits on the original text,
and the text is put together once.

Each rule module has ``RULE`` and ``plan(context, edits)``: it finds its places in
``context.document`` (the original text's round-trip parse) and states its change on ``edits``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from types import ModuleType

from mmfreeze.migrate.rules import RULES, Rule
from mmfreeze.migrate.yaml import (
    cp_vision_frame_sharding, freeze_config, frozen_multimodal_sharding, native_compile, rates, release_renames,
)
from mmfreeze.migrate.yaml.context import YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.text import split_lines

YamlPlan = Callable[[YamlContext, LineEdits], None]

_MODULES: tuple[ModuleType, ...] = (
    release_renames, freeze_config, frozen_multimodal_sharding, cp_vision_frame_sharding, rates, native_compile,
)
YAML_RULES: tuple[tuple[Rule, YamlPlan], ...] = tuple(
    (rule, module.plan) for rule in RULES for module in _MODULES if module.RULE == rule
)


def apply_yaml_rules(text: str, context: YamlContext, disabled: Collection[str] = ()) -> tuple[str, list[str]]:
    """``text`` with every rule not in ``disabled`` applied, and the ids of those that changed it.
    ``context.document`` must be ``text``'s round-trip parse."""
    edits = LineEdits(split_lines(text), source=context.source)
    applied = []
    for rule, plan in YAML_RULES:
        if rule.id in disabled:
            continue
        plan(context, edits)
        if (after := edits.text()) != text:  # a rule may restate what is there: changed text alone counts
            applied.append(rule.id)
            text = after
    return text, applied
