"""MF101 python-apply-parameter-freezing: a bound legacy freeze call -> ``apply_freeze_config``, proven per model.

Before::

    from nemo_automodel.components.training.utils import apply_parameter_freezing
    # mmfreeze: models=llava-hf/llava-1.5-7b-hf
    apply_parameter_freezing(model, {"freeze_language_model": True})

After::

    from mmfreeze.freeze import apply_freeze_config
    # mmfreeze: models=llava-hf/llava-1.5-7b-hf
    apply_freeze_config(model, {"vision": {"tower": True, "projector": False}, "language_model": False, "modules": ["model.language_model"]})

A call is rewritten only when its section (legacy flags, 0.7 selectors or both) is a literal and
the new section is proven to freeze what the framework froze on every model the call is bound to
(:mod:`mmfreeze.migrate.python.bindings`). Shapes read: the dict positional or as
``freeze_config=``, one line or many, and a test parameter whose ``pytest.mark.parametrize`` list
holds only literal dicts (each proven). Every other call keeps the legacy function and its import
and is reported with its line and what it needs: a binding, a literal, or a different split.
"""

from __future__ import annotations

import libcst as cst
from libcst import matchers as m
from libcst.metadata import PositionProvider, QualifiedNameProvider

from mmfreeze.exceptions import MmfreezeError
from mmfreeze.migrate.python.bindings import binding_for
from mmfreeze.migrate.python.context import PythonContext
from mmfreeze.migrate.python.dict_translate import literal_section, render_section
from mmfreeze.migrate.python.edits import Edit, RuleEdits, edit_for, source_of
from mmfreeze.migrate.python.prove import prove
from mmfreeze.migrate.report import Finding
from mmfreeze.migrate.rules import MF101
from mmfreeze.migrate.section import check_migratable

RULE = MF101
LEGACY_FUNCTION = "apply_parameter_freezing"
NEW_FUNCTION = "apply_freeze_config"
NEW_IMPORT = f"from mmfreeze.freeze import {NEW_FUNCTION}"
UNBOUND = ("no model is bound to this call, so no rewrite can be proven (the new vocabulary is checked per "
           "model); add `# mmfreeze: models=<model id>,...` or `# mmfreeze: recipes=<recipe.yaml>,...` on the line "
           "above to migrate it; the legacy call is kept")


def find(context: PythonContext) -> RuleEdits:
    """Edits for every proven call (and the import), findings for the others."""
    visitor = LegacyCallVisitor(context)
    context.wrapper.visit(visitor)
    if visitor.result.edits:  # a call was rewritten; a reported one (a finding) still calls the legacy function
        visitor.result.edits += _import_edits(context, legacy_calls_left=bool(visitor.result.findings))
    return visitor.result


class LegacyCallVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, context: PythonContext) -> None:
        super().__init__()
        self.context = context
        self.result = RuleEdits()
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
        if not isinstance(node.func, cst.Name) or not dicts:
            shown = "no config argument" if argument is None else f"{type(argument).__name__.lower()} argument"
            self._keep(node, f"{LEGACY_FUNCTION}(...) with a {shown} whose keys cannot be proven; migrate it by hand")
            return
        problem = self._rewrite(node, dicts)
        if problem is not None:
            self._keep(node, problem)

    def _rewrite(self, node: cst.Call, dicts: list[cst.Dict]) -> str | None:
        """Edits for a proven call; otherwise why it stays (``None`` when rewritten)."""
        codes = [source_of(self.context.lines, self.get_metadata(PositionProvider, d)) for d in dicts]
        sections = [literal_section(code) for code in codes]
        if None in sections:
            return "its freeze_config is not a literal dict; migrate it by hand"
        position = self.get_metadata(PositionProvider, node)
        where = f"{self.context.display}:{position.start.line}"
        proofs, problem = self._prove(sections, position.start.line, position.end.line, where)
        if problem is not None:
            return problem
        self.result.edits.append(edit_for(self.get_metadata(PositionProvider, node.func), NEW_FUNCTION))
        for found, code, section in zip(dicts, codes, proofs, strict=True):
            self.result.edits.append(edit_for(self.get_metadata(PositionProvider, found), render_section(section, code)))
        return None

    def _prove(self, sections: list[dict], first: int, last: int, where: str) -> tuple[list[dict], str | None]:
        """The proven new sections for a call on lines ``first``..``last``, or why there are none."""
        try:
            for section in sections:
                if check_migratable(section, source=where) not in ("legacy", "selectors"):
                    return [], "its dict is not a legacy or nemo-automodel 0.7 section"
        except MmfreezeError as error:
            return [], f"input error: {error.key}: {error.message}"
        binding = binding_for(self.context.pragmas, self.context.lines, first, last)
        if binding is None or self.context.models is None:
            return [], UNBOUND
        if binding.error is not None:
            return [], f"line {binding.line}: {binding.error}"
        try:
            targets = self.context.models.targets(binding, directory=self.context.directory)
        except MmfreezeError as error:
            return [], f"a bound model cannot be built: {error}"
        proofs = [prove(section, targets, source=where) for section in sections]
        failed = next((proof for proof in proofs if proof.section is None), None)
        if failed is not None:
            return [], f"not proven on the bound models: {failed.reason}"
        self.result.notes.append(f"{where}: {LEGACY_FUNCTION} rewritten, proven on {', '.join(binding.names)}")
        return [proof.section for proof in proofs], None

    def _literal_dicts(self, argument: cst.BaseExpression | None) -> list[cst.Dict]:
        if isinstance(argument, cst.Dict):
            return [argument]
        if isinstance(argument, cst.Name) and self._parametrized and argument.value in self._parametrized[-1]:
            values = [element.value for element in self._parametrized[-1][argument.value].elements]
            return values if all(isinstance(v, cst.Dict) for v in values) else []
        return []

    def _keep(self, node: cst.Call, message: str) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        self.result.findings.append(Finding(line=line, rule=RULE.id, message=message))


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


class ImportVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.legacy: list[tuple[cst.SimpleStatementLine, int]] = []
        self.has_new = False
        self.first_import: cst.SimpleStatementLine | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for statement in node.body:
            if isinstance(statement, (cst.Import, cst.ImportFrom)) and self.first_import is None:
                self.first_import = node
            if isinstance(statement, cst.ImportFrom) and not isinstance(statement.names, cst.ImportStar):
                names = [alias.name.value for alias in statement.names if isinstance(alias.name, cst.Name)]
                if LEGACY_FUNCTION in names:
                    self.legacy.append((node, len(statement.names)))
                self.has_new = self.has_new or NEW_FUNCTION in names


def _import_edits(context: PythonContext, *, legacy_calls_left: bool) -> list[Edit]:
    """The import side: import ``apply_freeze_config`` where calls now use it.

    The legacy import is replaced when it imported only the legacy name and no legacy call is left;
    otherwise the new import is added after it (a legacy call that was reported still needs the old one)."""
    visitor = ImportVisitor()
    context.wrapper.visit(visitor)
    if visitor.has_new:
        return []
    positions = context.wrapper.resolve(PositionProvider)
    if visitor.legacy:
        statement, count = visitor.legacy[0]
        position = positions[statement]
        if count == 1 and not legacy_calls_left:
            return [edit_for(position, NEW_IMPORT)]
        return [Edit((position.end.line + 1, 0), (position.end.line + 1, 0), NEW_IMPORT + context.eol)]
    line = positions[visitor.first_import].start.line if visitor.first_import is not None else 1
    return [Edit((line, 0), (line, 0), NEW_IMPORT + context.eol)]
