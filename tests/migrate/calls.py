"""Test helper: the freeze calls of a Python file, in source order, with their literal sections and binding.

Read with the standard ``ast`` module (not the rules' libcst code), so the tests pair an original
call with its rewrite independently of the rules that rewrote it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from mmfreeze.migrate.python.bindings import Binding, binding_for, find_pragmas

FREEZE_FUNCTIONS = ("apply_parameter_freezing", "apply_freeze_config")


@dataclass(frozen=True)
class FreezeCall:
    line: int
    function: str
    sections: tuple[Any, ...]
    """The literal dicts the call applies (one, or each of a parametrize list); empty when not literal."""
    binding: Binding | None


class _Calls(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[ast.Call, tuple[Any, ...]]] = []
        self._parametrized: list[dict[str, list[Any]]] = [{}]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._parametrized.append(_parametrize(node))
        self.generic_visit(node)
        self._parametrized.pop()

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in FREEZE_FUNCTIONS:
            argument = next((k.value for k in node.keywords if k.arg == "freeze_config"), None)
            argument = argument if argument is not None else (node.args[1] if len(node.args) > 1 else None)
            if isinstance(argument, ast.Dict):
                self.found.append((node, (ast.literal_eval(argument),)))
            elif isinstance(argument, ast.Name):
                self.found.append((node, tuple(self._parametrized[-1].get(argument.id, ()))))
        self.generic_visit(node)


def _parametrize(node: ast.FunctionDef) -> dict[str, list[Any]]:
    found = {}
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize":
            name, values = decorator.args[0], decorator.args[1]
            if isinstance(name, ast.Constant) and isinstance(values, ast.List):
                found[name.value] = [ast.literal_eval(element) for element in values.elts]
    return found


def freeze_calls(text: str) -> list[FreezeCall]:
    visitor = _Calls()
    visitor.visit(ast.parse(text))
    pragmas, lines = find_pragmas(text), text.splitlines()
    return [
        FreezeCall(line=node.lineno, function=node.func.id, sections=sections,  # type: ignore[attr-defined]
                   binding=binding_for(pragmas, lines, node.lineno, node.end_lineno or node.lineno))
        for node, sections in visitor.found
    ]


def rewritten_calls(old_text: str, new_text: str) -> list[tuple[FreezeCall, FreezeCall]]:
    """(original, rewrite) for every legacy call the migration turned into ``apply_freeze_config``."""
    pairs = list(zip(freeze_calls(old_text), freeze_calls(new_text), strict=True))
    return [(old, new) for old, new in pairs if old.function != new.function]
