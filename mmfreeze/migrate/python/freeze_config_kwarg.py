"""MF102 python-freeze-config-kwarg: ``freeze_config={...}`` on any other call -> new vocabulary.

Before::

    Model.from_pretrained(path, freeze_config={"freeze_vision_tower": True})

After::

    Model.from_pretrained(path, freeze_config={"vision": {"tower": True}, "language_model": False})

Only a literal dict of legacy keys is rewritten; a dict already in the new vocabulary is left
alone (so a second run is a no-op). Reported, not rewritten: a ``freeze_config=`` value that is not
such a literal, and reads of legacy keys (``cfg["freeze_config"]["freeze_vision_tower"]``,
``section.get("freeze_vision_tower")``), whose meaning changes with the migrated recipe.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m
from libcst.metadata import PositionProvider

from mmfreeze.migrate.python.apply_parameter_freezing import LEGACY_FUNCTION
from mmfreeze.migrate.python.dict_translate import translate
from mmfreeze.migrate.python.edits import RuleEdits, edit_for, source_of
from mmfreeze.migrate.report import Finding
from mmfreeze.migrate.rules import MF102

RULE = MF102
LEGACY_PREFIX = "freeze_"


class FreezeConfigKwargVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines
        self.result = RuleEdits()

    def visit_Call(self, node: cst.Call) -> None:
        if m.matches(node.func, m.Name(LEGACY_FUNCTION) | m.Attribute(attr=m.Name(LEGACY_FUNCTION))):
            return  # MF101's call: rewritten or reported there
        if m.matches(node.func, m.Attribute(attr=m.Name("get"))) and node.args and _is_legacy_key(node.args[0].value):
            self._report(node, "reads a legacy freeze_config key")
        for argument in node.args:
            if argument.keyword is not None and argument.keyword.value == "freeze_config":
                self._rewrite(argument.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if any(isinstance(e.slice, cst.Index) and _is_legacy_key(e.slice.value) for e in node.slice):
            self._report(node, "reads a legacy freeze_config key")

    def _rewrite(self, value: cst.BaseExpression) -> None:
        if isinstance(value, cst.Dict) and not _has_legacy_shape(value):
            return
        position = self.get_metadata(PositionProvider, value)
        translation = translate(value, source_of(self.lines, position)) if isinstance(value, cst.Dict) else None
        if translation is None:
            self._report(value, "freeze_config= value is not a literal dict of legacy keys")
            return
        self.result.edits.append(edit_for(position, translation.code))
        self.result.notes.extend(translation.notes)

    def _report(self, node: cst.CSTNode, what: str) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        self.result.findings.append(Finding(line=line, rule=RULE.id, message=f"{what}; migrate it by hand"))


def _is_legacy_key(node: cst.BaseExpression) -> bool:
    """A ``"freeze_*"`` string other than the section name ``"freeze_config"`` itself."""
    if not isinstance(node, cst.SimpleString):
        return False
    value = str(node.evaluated_value)
    return value.startswith(LEGACY_PREFIX) and value != "freeze_config"


def _has_legacy_shape(node: cst.Dict) -> bool:
    """``{}`` (legacy: it froze vision) or a dict with any ``freeze_*`` key."""
    keys = [e.key for e in node.elements if isinstance(e, cst.DictElement)]
    return not node.elements or any(_is_legacy_key(key) for key in keys)
