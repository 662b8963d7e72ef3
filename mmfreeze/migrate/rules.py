"""Every rewrite rule: a stable id and a name (docs/migration.md describes each). The same ids appear in reports.

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


MF001 = Rule(id="MF001", name="freeze-config-vocabulary")
MF002 = Rule(id="MF002", name="frozen-multimodal-sharding")
MF003 = Rule(id="MF003", name="cp-vision-frame-sharding")
MF004 = Rule(id="MF004", name="release-renames")
MF005 = Rule(id="MF005", name="rate-selectors")
MF006 = Rule(id="MF006", name="native-compile")
MF101 = Rule(id="MF101", name="python-apply-parameter-freezing")
MF102 = Rule(id="MF102", name="python-freeze-config-kwarg")

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
