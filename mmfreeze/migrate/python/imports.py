"""The import side of MF101: import ``apply_freeze_config`` where calls now use it.

The legacy import is replaced when it imported only the legacy name and no legacy call is left;
otherwise the new import is added after it (a legacy call that was reported still needs the old one).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from mmfreeze.migrate.python.edits import Edit, edit_for


class ImportVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, legacy_name: str, new_name: str) -> None:
        super().__init__()
        self.legacy_name = legacy_name
        self.new_name = new_name
        self.legacy: list[tuple[cst.SimpleStatementLine, int]] = []
        self.has_new = False
        self.first_import: cst.SimpleStatementLine | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for statement in node.body:
            if isinstance(statement, (cst.Import, cst.ImportFrom)) and self.first_import is None:
                self.first_import = node
            if isinstance(statement, cst.ImportFrom) and not isinstance(statement.names, cst.ImportStar):
                names = [alias.name.value for alias in statement.names if isinstance(alias.name, cst.Name)]
                if self.legacy_name in names:
                    self.legacy.append((node, len(statement.names)))
                self.has_new = self.has_new or self.new_name in names


def import_edits(wrapper: cst.MetadataWrapper, *, legacy_name: str, new_name: str, new_import: str,
                 legacy_calls_left: bool, eol: str) -> list[Edit]:
    visitor = ImportVisitor(legacy_name, new_name)
    wrapper.visit(visitor)
    if visitor.has_new:
        return []
    positions = wrapper.resolve(PositionProvider)
    if visitor.legacy:
        statement, count = visitor.legacy[0]
        position = positions[statement]
        if count == 1 and not legacy_calls_left:
            return [edit_for(position, new_import)]
        return [Edit((position.end.line + 1, 0), (position.end.line + 1, 0), new_import + eol)]
    line = positions[visitor.first_import].start.line if visitor.first_import is not None else 1
    return [Edit((line, 0), (line, 0), new_import + eol)]
