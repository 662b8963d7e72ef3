"""MF102 python-freeze-config-kwarg: framework-vocabulary ``freeze_config=`` elsewhere, and reads of legacy keys.

Before::

    model = NeMoAutoModelForImageTextToText.from_pretrained(path, freeze_config={"freeze_vision_tower": True})
    if cfg["freeze_config"]["freeze_vision_tower"]:
        ...

After (unchanged; two report lines)::

    f.py:1: MF102 not rewritten: freeze_config= passed to NeMoAutoModelForImageTextToText.from_pretrained ...
    f.py:2: MF102 not rewritten: reads a legacy freeze_config key; ...

This rule only reports. A ``freeze_config=`` keyword on any call but the two freezing functions
goes to a callee that reads it with its own parser: nemo-automodel's (``from_pretrained``, its
recipes) accepts its own vocabulary and rejects the new one, so rewriting the literal would break
the call. Reads of legacy keys (``cfg["freeze_config"]["freeze_vision_tower"]``,
``section.get("freeze_vision_tower")``) change meaning once the recipe is migrated. A dict already
in the new vocabulary is not reported, so a second run reports the same sites.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m
from libcst.metadata import PositionProvider

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.keys import detect_vocabulary
from mmfreeze.migrate.python.apply_parameter_freezing import LEGACY_FUNCTION, NEW_FUNCTION
from mmfreeze.migrate.python.context import PythonContext
from mmfreeze.migrate.python.dict_translate import literal_section
from mmfreeze.migrate.python.edits import RuleEdits, source_of
from mmfreeze.migrate.report import Finding
from mmfreeze.migrate.rules import MF102

RULE = MF102
LEGACY_PREFIX = "freeze_"
_FREEZING_FUNCTIONS = (LEGACY_FUNCTION, NEW_FUNCTION)


def find(context: PythonContext) -> RuleEdits:
    visitor = FreezeConfigKwargVisitor(context)
    context.wrapper.visit(visitor)
    return visitor.result


class FreezeConfigKwargVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: PythonContext) -> None:
        super().__init__()
        self.context = context
        self.result = RuleEdits()

    def visit_Call(self, node: cst.Call) -> None:
        if m.matches(node.func, m.Name() | m.Attribute()) and _callee_name(node.func) in _FREEZING_FUNCTIONS:
            return  # MF101's call (rewritten or reported there), or one already migrated
        if m.matches(node.func, m.Attribute(attr=m.Name("get"))) and node.args and _is_legacy_key(node.args[0].value):
            self._report(node, "reads a legacy freeze_config key, whose meaning changes with the migrated recipe; migrate it by hand")
        for argument in node.args:
            if argument.keyword is not None and argument.keyword.value == "freeze_config" and not self._is_new(argument.value):
                callee = source_of(self.context.lines, self.get_metadata(PositionProvider, node.func))
                self._report(argument.value, (
                    f"freeze_config= passed to {callee}, which reads it with its own parser (nemo-automodel's rejects "
                    "the new vocabulary); to migrate it, drop the keyword and call apply_freeze_config on the loaded model"))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if any(isinstance(e.slice, cst.Index) and _is_legacy_key(e.slice.value) for e in node.slice):
            self._report(node, "reads a legacy freeze_config key, whose meaning changes with the migrated recipe; migrate it by hand")

    def _is_new(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Dict):
            return False
        section = literal_section(source_of(self.context.lines, self.get_metadata(PositionProvider, value)))
        try:
            return section is not None and detect_vocabulary(section) == "new"
        except FreezeConfigError:
            return False

    def _report(self, node: cst.CSTNode, message: str) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        self.result.findings.append(Finding(line=line, rule=RULE.id, message=message))


def _callee_name(func: cst.BaseExpression) -> str:
    return func.value if isinstance(func, cst.Name) else func.attr.value  # type: ignore[union-attr]


def _is_legacy_key(node: cst.BaseExpression) -> bool:
    """A ``"freeze_*"`` string other than the section name ``"freeze_config"`` itself."""
    if not isinstance(node, cst.SimpleString):
        return False
    value = str(node.evaluated_value)
    return value.startswith(LEGACY_PREFIX) and value != "freeze_config"
