"""The snapshot store: one UTF-8 text file per recipe, at the path :mod:`layout` gives.

The files are those of syrupy's single-file text extension (read in text mode, so ``\\r\\n`` reads
as ``\\n``; written as the text is). They are read and written here, not through syrupy: importing
any part of syrupy imports pytest (``syrupy/__init__.py``), and a command that checks recipes has no
test session. A snapshot is replaced atomically (:func:`mmfreeze.atomic.replace_file`: a reader, a
full disk or a kill leaves the old file or the new one, never part of one), and a file that cannot
be read, written or deleted is a :class:`~mmfreeze.exceptions.SnapshotError` naming it, never a
missing snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import SnapshotError
from mmfreeze.freeze.compiler.target import made_for
from mmfreeze.models.renames import Renames
from mmfreeze.regular_files import SNAPSHOT_LIMIT, read_regular
from mmfreeze.settings import Settings
from mmfreeze.snapshots.format import parse_snapshot
from mmfreeze.snapshots.layout import SNAPSHOT_SUFFIX, snapshot_path


def check_inside(path: Path, folder: Path) -> None:
    """Refuse a snapshot path that resolves outside the snapshot ``folder`` (a linked subfolder):
    nothing is read or written there."""
    resolved = path.parent.resolve()
    if not resolved.is_relative_to(folder.resolve()):
        raise SnapshotError(f"resolves through a symbolic link to {resolved}, outside the snapshot folder {folder}; "
                            "nothing read or written there (replace the link with a folder)", source=str(path))


def read_snapshot_text(path: Path) -> str:
    """A snapshot file's text: a regular file within :data:`~mmfreeze.regular_files.SNAPSHOT_LIMIT`,
    read with text mode's universal newlines (as syrupy reads it: a file saved with ``\r\n``
    still matches). Raises ``OSError`` (``FileNotFoundError`` when there is none) or
    ``UnicodeDecodeError``; the check and the guard say what that means for them."""
    return read_regular(path, limit=SNAPSHOT_LIMIT).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def read_stored(path: Path) -> str | None:
    """The stored text, or ``None`` when there is no file; a file that exists but cannot be read
    (a pipe, a device, too large) is an error, not a missing snapshot."""
    try:
        return read_snapshot_text(path)
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise SnapshotError(f"cannot read the snapshot: not UTF-8 text ({error.reason})", source=str(path)) from error
    except OSError as error:
        raise SnapshotError(f"cannot read the snapshot: {os_reason(error, str(path))}", source=str(path)) from error


def recorded_renames(settings: Settings) -> Callable[[Path, str], Renames | None]:
    """What a run reads of the committed snapshots (:attr:`mmfreeze.workspace.Workspace.records`):
    the checkpoint renames in a recipe's snapshot, when it was made where ``compiled_for`` names
    (release, transformers and builder). They are the only record, outside the environment that
    builds it, of how the framework's own class names the checkpoint's tensors. A snapshot that is
    missing, unreadable or made elsewhere records nothing (the check reports it on its own)."""

    def records(recipe: Path, compiled_for: str) -> Renames | None:
        try:
            text = read_stored(snapshot_path(recipe, settings.root, settings.snapshots))
            snapshot = None if text is None else parse_snapshot(text)
        except SnapshotError:
            return None
        if snapshot is None:
            return None
        header = snapshot.header
        return snapshot.renames if made_for(header.framework, header.transformers, header.builder) == compiled_for else None

    return records


def write_stored(path: Path, text: str) -> None:
    """Create the folder and replace the file atomically; a failed write (disk full, file size
    limit, permissions, a read-only folder) raises :class:`SnapshotError`, and the old file stays."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text.encode("utf-8"))
    except OSError as error:
        raise SnapshotError(f"cannot write the snapshot: {os_reason(error, str(path))}", source=str(path)) from error


def delete_stored(path: Path, stop: Path) -> str | None:
    """Delete an orphaned snapshot and the folders it leaves empty up to ``stop``; why it could
    not be deleted (the system's words), else ``None``."""
    try:
        path.unlink()
    except OSError as error:
        return os_reason(error, str(path))
    folder = path.parent
    while folder != stop and folder.is_relative_to(stop) and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
    return None


def snapshot_files(scopes: Iterable[Path]) -> list[Path]:
    """Every snapshot file under ``scopes``, sorted."""
    found = {path for scope in scopes if scope.is_dir() for path in scope.rglob("*" + SNAPSHOT_SUFFIX) if path.is_file()}
    return sorted(found, key=str)


def os_reason(error: OSError, path: str) -> str:
    """Why an operation on ``path`` failed: the system's words, and the other file it concerned
    (a folder that could not be created), never a temporary file's name."""
    reason = error.strerror or str(error)
    other = error.filename
    if other is None or str(other) == str(path) or Path(str(other)).name.startswith(f".{Path(path).name}."):
        return reason
    return f"{reason}: {other}"
