"""A YAML rule as one object, the way bump-pydantic and libcst codemods run theirs.

A file is parsed once. In :data:`mmfreeze.migrate.rules.RULES` order, each rule says whether it
``applies`` to the data as the rules before it leave it, ``plan``s what it needs the model for,
and states its part of the data the rewritten file must hold (``expect``); then each that applies
states its ``edit`` on the original text's lines, the text is put together once, and the result
is parsed once and compared with the expected data (:mod:`mmfreeze.migrate.yaml_file`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from mmfreeze.migrate.rules import Rule
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits


class YamlRule:
    rule: ClassVar[Rule]

    def applies(self, planning: Planning, data: Mapping[str, Any]) -> bool:
        """Whether it may change the file, whose data the rules before it leave as ``data``."""
        raise NotImplementedError

    def plan(self, planning: Planning, data: Mapping[str, Any], plan: SectionPlan) -> SectionPlan:
        """``plan`` with what this rule writes (only the rules that need the model plan anything)."""
        return plan

    def expect(self, data: dict[str, Any], plan: SectionPlan) -> None:
        """Its change on ``data`` (a copy of the file's data, as the rules before it left it): what
        the rewritten file must hold."""
        raise NotImplementedError

    def edit(self, context: YamlContext, edits: LineEdits) -> None:
        """Its change, stated on ``edits`` (the original text's lines), placed by ``context.document``."""
        raise NotImplementedError
