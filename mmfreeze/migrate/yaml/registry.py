"""The YAML rules, in :data:`mmfreeze.migrate.rules.RULES` order (the one place the order and its
reasons are stated), and the passes a file makes through them on its one parse: plan (each rule
that applies plans and states what the file must then hold), then edit (each states its line edits
on the original text, and the text is put together once)."""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from typing import Any

from mmfreeze.migrate.rules import RULES
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.cp_vision_frame_sharding import CpVisionFrameSharding
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.freeze_config import FreezeConfigVocabulary
from mmfreeze.migrate.yaml.frozen_multimodal_sharding import FrozenMultimodalSharding
from mmfreeze.migrate.yaml.native_compile import NativeCompile
from mmfreeze.migrate.yaml.rates import RateSelectors
from mmfreeze.migrate.yaml.release_renames import ReleaseRenames
from mmfreeze.migrate.yaml.rule import YamlRule
from mmfreeze.migrate.yaml.text import split_lines

_BY_ID = {rule.rule.id: rule for rule in (
    ReleaseRenames(), FreezeConfigVocabulary(), FrozenMultimodalSharding(), CpVisionFrameSharding(), RateSelectors(),
    NativeCompile(),
)}
YAML_RULES: tuple[YamlRule, ...] = tuple(_BY_ID[rule.id] for rule in RULES if rule.id in _BY_ID)


def plan_yaml_rules(
    planning: Planning, disabled: Collection[str] = (),
) -> tuple[tuple[YamlRule, ...], SectionPlan, dict[str, Any]]:
    """The rules not in ``disabled`` that apply to the file, what they planned, and the data the
    rewritten file must hold."""
    plan, data, applying = SectionPlan(), copy.deepcopy(dict(planning.document)), []
    for rule in YAML_RULES:
        if rule.rule.id in disabled or not rule.applies(planning, data):
            continue
        plan = rule.plan(planning, data, plan)
        rule.expect(data, plan)
        applying.append(rule)
    return tuple(applying), plan, data


def apply_yaml_rules(text: str, context: YamlContext, rules: Sequence[YamlRule]) -> tuple[str, list[str]]:
    """``text`` with each of ``rules``' edits, and the ids of those that changed it.
    ``context.document`` must be ``text``'s round-trip parse."""
    edits = LineEdits(split_lines(text), source=context.source)
    applied = []
    for rule in rules:
        rule.edit(context, edits)
        if (after := edits.text()) != text:  # a rule may restate what is there: changed text alone counts
            applied.append(rule.rule.id)
            text = after
    return text, applied
