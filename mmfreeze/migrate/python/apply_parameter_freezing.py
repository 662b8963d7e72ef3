"""MF101 python-apply-parameter-freezing: legacy freeze calls with literal dicts -> ``apply_freeze_config``.

Before::

    from nemo_automodel.components.training.utils import apply_parameter_freezing
    apply_parameter_freezing(model, {"freeze_language_model": True})

After::

    from mmfreeze.freeze import apply_freeze_config
    apply_freeze_config(model, {"vision": {"tower": True}, "language_model": True})

Shapes rewritten: the dict positional or as ``freeze_config=``, one line or many, ``{}``, and a
test parameter whose ``pytest.mark.parametrize`` list holds only literal dicts. Anything else (a
variable, a computed dict, an attribute call) is reported with its line and left as it is, the
call and its import included.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m
from libcst.metadata import PositionProvider, QualifiedNameProvider

from mmfreeze.migrate.python.dict_translate import translate
from mmfreeze.migrate.python.edits import RuleEdits, edit_for, source_of
from mmfreeze.migrate.report import Finding
from mmfreeze.migrate.rules import MF101

RULE = MF101
LEGACY_FUNCTION = "apply_parameter_freezing"
NEW_FUNCTION = "apply_freeze_config"
NEW_IMPORT = f"from mmfreeze.freeze import {NEW_FUNCTION}"


class LegacyCallVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines
        self.result = RuleEdits()
        self.rewritten = 0
        self.kept = 0
        self._parametrized: list[dict[str, cst.List]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._parametrized.append(_parametrize_lists(node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._parametrized.pop()

    def visit_Call(self, node: cst.Call) -> None:
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, node.func, set())}
        if not any(name == LEGACY_FUNCTION or name.endswith("." + LEGACY_FUNCTION) for name in names):
            return
        argument = _config_argument(node)
        dicts = self._literal_dicts(argument)
        translations = [translate(d, source_of(self.lines, self.get_metadata(PositionProvider, d))) for d in dicts]
        if not isinstance(node.func, cst.Name) or not dicts or None in translations:
            self.kept += 1
            self._report(node, argument)
            return
        self.rewritten += 1
        self.result.edits.append(edit_for(self.get_metadata(PositionProvider, node.func), NEW_FUNCTION))
        for found, translation in zip(dicts, translations, strict=True):
            self.result.edits.append(edit_for(self.get_metadata(PositionProvider, found), translation.code))
            self.result.notes.extend(translation.notes)

    def _literal_dicts(self, argument: cst.BaseExpression | None) -> list[cst.Dict]:
        if isinstance(argument, cst.Dict):
            return [argument]
        if isinstance(argument, cst.Name) and self._parametrized and argument.value in self._parametrized[-1]:
            values = [element.value for element in self._parametrized[-1][argument.value].elements]
            return values if all(isinstance(v, cst.Dict) for v in values) else []
        return []

    def _report(self, node: cst.Call, argument: cst.BaseExpression | None) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        shown = "no config argument" if argument is None else f"{type(argument).__name__.lower()} argument"
        self.result.findings.append(Finding(
            line=line, rule=RULE.id,
            message=f"{LEGACY_FUNCTION}(...) with a {shown} whose keys cannot be proven; migrate it by hand",
        ))


def _config_argument(call: cst.Call) -> cst.BaseExpression | None:
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "freeze_config"), None)
    positional = [a.value for a in call.args if a.keyword is None and a.star == ""]
    return keyword if keyword is not None else (positional[1] if len(positional) > 1 else None)


def _parametrize_lists(node: cst.FunctionDef) -> dict[str, cst.List]:
    """Parameter name -> its literal ``@pytest.mark.parametrize("name", [...])`` list."""
    found = {}
    for decorator in node.decorators:
        call = decorator.decorator
        if m.matches(call, m.Call(func=m.Attribute(attr=m.Name("parametrize")))) and len(call.args) >= 2:
            name, values = call.args[0].value, call.args[1].value
            if isinstance(name, cst.SimpleString) and isinstance(values, cst.List) and "," not in name.evaluated_value:
                found[name.evaluated_value.strip()] = values
    return found
