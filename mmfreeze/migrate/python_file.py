"""One Python file: run the Python rules (:mod:`.python.registry`), splice their edits, prove the result parses."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import libcst as cst

from mmfreeze.migrate.python.apply_parameter_freezing import LEGACY_FUNCTION
from mmfreeze.freeze.keys import SECTION
from mmfreeze.migrate.python.bindings import find_pragmas
from mmfreeze.migrate.python.context import PythonContext
from mmfreeze.migrate.python.edits import parses, splice
from mmfreeze.migrate.python.prove import BoundModels
from mmfreeze.migrate.python.registry import PYTHON_RULES
from mmfreeze.migrate.report import PYTHON_NOTE, FileResult

_MARKERS = (LEGACY_FUNCTION, SECTION)
"""A file holding neither is not parsed: every rule looks for a freezing call or a `freeze_config` read."""


def migrate_python(
    text: str, *, display: str, disabled: Collection[str], directory: Path = Path("."), models: BoundModels | None = None,
) -> FileResult:
    """The migrated text of one Python file, with the sites that were not rewritten.

    ``directory`` is where the file's `recipes=` pragmas are relative to; ``models`` builds bound
    models (without it no call can be proven, so none is rewritten)."""
    if not any(marker in text for marker in _MARKERS):
        return FileResult(display=display, old_text=text, new_text=text, status="unchanged")
    try:
        wrapper = cst.MetadataWrapper(cst.parse_module(text))
    except cst.ParserSyntaxError as error:
        return FileResult(display=display, old_text=text, new_text=text, status="skipped",
                          error=f"{display}:{error.raw_line}: Python does not parse: {error.message}")
    lines = text.splitlines(keepends=True)
    context = PythonContext(wrapper=wrapper, lines=lines, display=display, directory=directory,
                            pragmas=find_pragmas(text), models=models)
    results = {rule.id: find(context) for rule, find in PYTHON_RULES if rule.id not in disabled}
    new_text = splice(lines, [edit for found in results.values() for edit in found.edits])
    if not parses(new_text):
        return FileResult(display=display, old_text=text, new_text=text, status="skipped",
                          error="the rewritten code does not parse; nothing written (please report this file)")
    rules = tuple(rule for rule, found in results.items() if found.edits)
    notes = [note for found in results.values() for note in found.notes]
    return FileResult(
        display=display, old_text=text, new_text=new_text, rules=rules,
        status="python-rewritten" if rules else "unchanged",
        notes=tuple(notes + [PYTHON_NOTE] if rules else notes),
        findings=tuple(sorted((f for found in results.values() for f in found.findings), key=lambda f: f.line)),
    )
