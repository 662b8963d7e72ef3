"""Atomic file replacement: a reader (or a crash) sees the old bytes or the new ones, never a mix."""

from __future__ import annotations

import os
from pathlib import Path

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import MigrationError
from mmfreeze.settings import find_root


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (:func:`mmfreeze.atomic.replace_file`)."""
    try:
        replace_file(path, text.encode("utf-8"))
    except OSError as error:
        raise MigrationError(f"cannot write: {error}", source=str(path)) from error


def resolve_write_target(path: Path, root: Path | None, *, display: str) -> Path:
    """The file a rewrite of ``path`` replaces: ``path`` itself, or for a symbolic link (or a path
    through a linked folder) the file it resolves to, so the link stays a link. A target outside the
    repository ``root`` (default: the link's own repository, :func:`~mmfreeze.settings.find_root`)
    is refused: a :class:`MigrationError` naming the link, nothing written."""
    given, target = Path(os.path.abspath(path)), path.resolve()
    if target == given:
        return target
    repository = root if root is not None else find_root(given.parent, cwd=Path.cwd())[0]
    if not target.is_relative_to(repository.resolve()):
        raise MigrationError(
            f"not written: it resolves through a symbolic link to {target}, outside the repository {repository}; "
            "migrate that file in its own repository, or replace the link with a copy",
            source=display,
        )
    return target

