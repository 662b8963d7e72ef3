"""One Python file: run the Python rules (MF101 then MF102), splice their edits, prove the result parses."""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from mmfreeze.migrate.python import apply_parameter_freezing as mf101
from mmfreeze.migrate.python import freeze_config_kwarg as mf102
from mmfreeze.migrate.python.edits import parses, splice
from mmfreeze.migrate.python.imports import import_edits
from mmfreeze.migrate.report import PYTHON_NOTE, FileResult

_MARKERS = (mf101.LEGACY_FUNCTION, "freeze_config", mf102.LEGACY_PREFIX)


def migrate_python(text: str, *, display: str, disabled: Collection[str]) -> FileResult:
    """The migrated text of one Python file, with the sites that were not rewritten."""
    if not any(marker in text for marker in _MARKERS):
        return FileResult(display=display, old_text=text, new_text=text, status="unchanged")
    try:
        wrapper = cst.MetadataWrapper(cst.parse_module(text))
    except cst.ParserSyntaxError as error:
        return FileResult(display=display, old_text=text, new_text=text, status="skipped",
                          error=f"{display}:{error.raw_line}: Python does not parse: {error.message}")
    lines = text.splitlines(keepends=True)
    results = {rule.id: found for rule, found in _run_rules(wrapper, lines, disabled, text)}
    edits = [edit for found in results.values() for edit in found.edits]
    new_text = splice(lines, edits)
    if not parses(new_text):
        return FileResult(display=display, old_text=text, new_text=text, status="skipped",
                          error="the rewritten code does not parse; nothing written (please report this file)")
    rules = tuple(rule for rule, found in results.items() if found.edits)
    notes = sorted({note for found in results.values() for note in found.notes})
    return FileResult(
        display=display, old_text=text, new_text=new_text, rules=rules,
        status="python-rewritten" if rules else "unchanged",
        notes=tuple(notes + [PYTHON_NOTE] if rules else notes),
        findings=tuple(sorted((f for found in results.values() for f in found.findings), key=lambda f: f.line)),
    )


def _run_rules(wrapper: cst.MetadataWrapper, lines: list[str], disabled: Collection[str], text: str):
    if mf101.RULE.id not in disabled:
        visitor = mf101.LegacyCallVisitor(lines)
        wrapper.visit(visitor)
        if visitor.rewritten:
            eol = "\r\n" if "\r\n" in text else "\n"
            visitor.result.edits += import_edits(
                wrapper, legacy_name=mf101.LEGACY_FUNCTION, new_name=mf101.NEW_FUNCTION, new_import=mf101.NEW_IMPORT,
                legacy_calls_left=visitor.kept > 0, eol=eol,
            )
        yield mf101.RULE, visitor.result
    if mf102.RULE.id not in disabled:
        visitor = mf102.FreezeConfigKwargVisitor(lines)
        wrapper.visit(visitor)
        yield mf102.RULE, visitor.result
