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
the call. Reads of legacy keys from a `freeze_config` section (``cfg["freeze_config"]["freeze_vision_tower"]``,
``section.get("freeze_vision_tower")`` after ``section = cfg.get("freeze_config")``) change meaning once
the recipe is migrated; a ``freeze_*`` key read from anything else (``recipe_cfg.get("freeze_embeddings")``)
is not this section's, and is not reported. A dict already in the new vocabulary is not reported, so
a second run reports the same sites.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst import matchers as m
from libcst.metadata import PositionProvider

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.keys import SECTION, detect_vocabulary, is_framework_key
from mmfreeze.migrate.python.apply_parameter_freezing import LEGACY_FUNCTION, NEW_FUNCTION
from mmfreeze.migrate.python.context import PythonContext
from mmfreeze.migrate.python.dict_translate import literal_section
from mmfreeze.migrate.python.edits import RuleEdits, source_of
from mmfreeze.migrate.report import Finding
from mmfreeze.migrate.rules import MF102

RULE = MF102
LEGACY_READ = "reads a legacy freeze_config key, whose meaning changes with the migrated recipe; migrate it by hand"
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
        self.sections: set[str] = {SECTION}
        """Names bound to a `freeze_config` section in this file (assignments seen so far)."""

    def visit_Assign(self, node: cst.Assign) -> None:
        if _is_section(node.value, self.sections):
            self.sections.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    def visit_Call(self, node: cst.Call) -> None:
        if m.matches(node.func, m.Name() | m.Attribute()) and _callee_name(node.func) in _FREEZING_FUNCTIONS:
            return  # MF101's call (rewritten or reported there), or one already migrated
        if _get_key(node, _is_legacy_key) and _is_section(node.func.value, self.sections):  # type: ignore[attr-defined]
            self._report(node, LEGACY_READ)
        for argument in node.args:
            if argument.keyword is not None and argument.keyword.value == "freeze_config" and not self._is_new(argument.value):
                callee = source_of(self.context.lines, self.get_metadata(PositionProvider, node.func))
                self._report(argument.value, (
                    f"freeze_config= passed to {callee}, which reads it with its own parser (nemo-automodel's rejects "
                    "the new vocabulary); to migrate it, drop the keyword and call apply_freeze_config on the loaded model"))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if _subscript_key(node, _is_legacy_key) and _is_section(node.value, self.sections):
            self._report(node, LEGACY_READ)

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
    """A string naming one of the framework's `freeze_config` keys (not the section name itself)."""
    return isinstance(node, cst.SimpleString) and node.evaluated_value != SECTION and is_framework_key(node.evaluated_value)


def _is_section_key(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == SECTION


def _subscript_key(node: cst.Subscript, test: Callable[[cst.BaseExpression], bool]) -> bool:
    """``x[key]`` with a key that passes ``test``."""
    return any(isinstance(element.slice, cst.Index) and test(element.slice.value) for element in node.slice)


def _get_key(node: cst.Call, test: Callable[[cst.BaseExpression], bool]) -> bool:
    """``x.get(key, ...)`` with a key that passes ``test``."""
    return m.matches(node.func, m.Attribute(attr=m.Name("get"))) and bool(node.args) and test(node.args[0].value)


def _is_section(node: cst.BaseExpression, names: set[str]) -> bool:
    """Whether ``node`` reads a `freeze_config` section: ``x["freeze_config"]``, ``x.get("freeze_config")``,
    ``x.freeze_config``, or a name bound to one of these."""
    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, cst.Attribute):
        return node.attr.value == SECTION
    if isinstance(node, cst.Subscript):
        return _subscript_key(node, _is_section_key)
    return isinstance(node, cst.Call) and _get_key(node, _is_section_key)
