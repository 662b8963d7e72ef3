"""What a Python rule gets: the parsed file, its lines, where it is, and the models its call sites bind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from mmfreeze.migrate.python.bindings import Binding
from mmfreeze.migrate.python.prove import BoundModels


@dataclass(frozen=True, kw_only=True)
class PythonContext:
    wrapper: cst.MetadataWrapper
    lines: list[str]
    """The file's lines with their endings (edits are spliced into them)."""
    display: str
    """The file as messages name it."""
    directory: Path
    """Where `recipes=` paths of a pragma are relative to."""
    pragmas: Mapping[int, Binding]
    """Line -> the ``# mmfreeze:`` binding written there."""
    models: BoundModels | None = None
    """Builds bound models; ``None`` when no model can be built (every bound site is then reported)."""

    @property
    def eol(self) -> str:
        return "\r\n" if any(line.endswith("\r\n") for line in self.lines) else "\n"
