"""Every rewrite rule: a stable id, a name, one line of description. The same ids appear in reports.

Order is the order rules run in a file. YAML: MF004 runs first, so that MF001 plans on selectors
that name the installed release's modules; MF001 rewrites `freeze_config`; MF002 runs before
MF003 because both write into `distributed.multimodal` and MF003 then finds the block MF002
created. MF005 (rates) is independent of the others. MF006 runs last: it
compiles the section MF001 wrote and the rate selectors MF005 wrote. Python (:mod:`mmfreeze.migrate.python.registry`): MF101 (calls of the legacy function)
runs before MF102 (`freeze_config=` keywords, legacy key reads) so that a call both could claim is
claimed by MF101, which also renames the function.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mmfreeze.exceptions import MigrationError


@dataclass(frozen=True, kw_only=True)
class Rule:
    id: str
    name: str
    description: str


MF001 = Rule(id="MF001", name="freeze-config-vocabulary",
             description="YAML `freeze_config`: legacy flags and 0.7 selectors -> (modality, role) flags, "
                         "language_model, modules, except")
MF002 = Rule(id="MF002", name="frozen-multimodal-sharding",
             description="YAML `distributed.frozen_multimodal_sharding` -> `distributed.multimodal.frozen_sharding`")
MF003 = Rule(id="MF003", name="cp-vision-frame-sharding",
             description="YAML `distributed.cp_vision_frame_sharding` -> `distributed.multimodal.vision.frame_sharding`")
MF004 = Rule(id="MF004", name="release-renames",
             description="YAML `freeze_config` selectors that match no module of the installed transformers "
                         "release, moved through its conversion mapping onto the paths it renamed them to")
MF005 = Rule(id="MF005", name="rate-selectors",
             description="YAML `optimizer.param_group_overrides` regex patterns -> (modality, role) selectors, "
                         "only when proven to group every tensor as before")
MF006 = Rule(id="MF006", name="native-compile",
             description="YAML: the (modality, role) source kept under `mmfreeze:`, and `freeze_config` (and rate "
                         "patterns) compiled beside it into what the framework release runs natively, proven on the "
                         "model it builds")
MF101 = Rule(id="MF101", name="python-apply-parameter-freezing",
             description="Python `apply_parameter_freezing(model, {...})` -> `apply_freeze_config(model, {...})`, "
                         "only when bound to models and proven on each")
MF102 = Rule(id="MF102", name="python-freeze-config-kwarg",
             description="Python `freeze_config=` on other callees and reads of legacy keys: reported, never rewritten")

RULES: tuple[Rule, ...] = (MF004, MF001, MF002, MF003, MF005, MF006, MF101, MF102)


def resolve_disabled(values: Iterable[str]) -> frozenset[str]:
    """Rule ids from ``--disable`` values (an id or a name); an unknown value lists the valid ones."""
    by_key = {key: rule.id for rule in RULES for key in (rule.id.lower(), rule.name)}
    disabled = set()
    for value in values:
        if value.lower() not in by_key:
            valid = ", ".join(f"{rule.id} ({rule.name})" for rule in RULES)
            raise MigrationError(f"unknown rule {value!r}; rules: {valid}", key="--disable")
        disabled.add(by_key[value.lower()])
    return frozenset(disabled)
