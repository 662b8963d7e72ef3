"""The syrupy extension: one text file per recipe, at the path :mod:`layout` gives.

syrupy does the comparing, diffing and unused-snapshot accounting; this class says where a recipe's
file is and which files are ours, and does the file system's part itself: a snapshot is replaced
atomically (:func:`mmfreeze.atomic.replace_file`: a reader, a full disk or a kill leaves the old file
or the new one, never part of one), and a file that cannot be read, written or deleted is a
:class:`~mmfreeze.exceptions.SnapshotError` naming it, never a missing snapshot. A recipe's test location is a
:class:`~mmfreeze.snapshots.plugin.RecipeItem`, which carries its snapshot path and the run's
snapshot folder. syrupy also offers every other collected test of a session to every extension
(to find unused snapshots); for those this extension owns nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import SnapshotError
from mmfreeze.snapshots.layout import SNAPSHOT_SUFFIX, recipe_path

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import SerializableData, SnapshotIndex


class RecipeSnapshotExtension(SingleFileSnapshotExtension):
    file_extension = SNAPSHOT_SUFFIX.removeprefix(".")
    _write_mode = WriteMode.TEXT
    _on_delete_failure: Callable[[str, str], None] | None = None
    """Told which orphaned snapshot this extension discovered could not be deleted, and why (set by
    :meth:`discover_snapshots`: syrupy deletes through the instance that discovered the file)."""

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        # The recipe's file name: also what read_snapshot_collection names a stored file, so a used
        # snapshot and the one discovered on disk are the same snapshot to syrupy.
        return Path(test_location.item.snapshot_path).name.removesuffix(SNAPSHOT_SUFFIX)

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(Path(test_location.item.snapshot_path).parent)

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        if not _is_recipe(test_location):
            return str(Path(test_location.filepath).parent)  # any key: nothing is discovered there
        return str(test_location.item.snapshot_dir)

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        return _is_recipe(test_location) and Path(snapshot_location) == Path(test_location.item.snapshot_path)

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        # A snapshot whose recipe still exists belongs to that recipe even when this run did not
        # check it (a subset of paths, a recipe that failed to load): syrupy must never count it
        # unused, so it is not offered for discovery. Only snapshots of vanished recipes are, and
        # of files that are no longer recipes (excluded, or without a `model:` section).
        if not self.is_snapshot_location(location=filepath):
            return False
        item = test_location.item
        return not item.tracks(recipe_path(Path(filepath), item.root, item.snapshot_dir))

    def discover_snapshots(
        self, *, test_location: PyTestLocation, ignore_extensions: list[str] | None = None
    ) -> SnapshotCollections:
        # Unlike the base class, never record files we do not own: the snapshot folder may hold
        # anything (a README), and syrupy deletes unknown collections it discovered.
        # Orphans are looked for in the item's orphan scopes only (`mmfreeze snapshot`: the mirrors
        # of the folders it was given), whatever folders pytest was handed to collect from.
        discovered = SnapshotCollections()
        if not _is_recipe(test_location):
            return discovered
        self._on_delete_failure = test_location.item.record_delete_failure
        for filepath in _snapshot_files(test_location.item.orphan_scopes):
            if self.owns_snapshot_collection(filepath=filepath, test_location=test_location):
                discovered.add(self.read_snapshot_collection(snapshot_location=filepath))
        return discovered

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> SerializableData | None:
        """The stored text, or ``None`` when there is no file; a file that exists but cannot be
        read is an error, not a missing snapshot."""
        try:
            return super().read_snapshot_data_from_location(
                snapshot_location=snapshot_location, snapshot_name=snapshot_name, session_id=session_id
            )
        except UnicodeDecodeError as error:
            raise SnapshotError(f"cannot read the snapshot: not UTF-8 text ({error.reason})", source=snapshot_location) from error
        except OSError as error:
            raise SnapshotError(f"cannot read the snapshot: {os_reason(error, snapshot_location)}",
                                source=snapshot_location) from error

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        """Replace the file atomically; a failed write (disk full, file size limit, permissions, a
        read-only folder) raises :class:`SnapshotError` naming the file, and the old file stays."""
        location = snapshot_collection.location
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, str):
            raise TypeError(f"a recipe snapshot is text, not {type(data).__name__}")
        try:
            replace_file(Path(location), data.encode(cls.get_write_encoding() or "utf-8"))
        except OSError as error:
            raise SnapshotError(f"cannot write the snapshot: {os_reason(error, location)}", source=location) from error

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        """Delete an orphaned snapshot; one that cannot be deleted stays (reported as orphaned,
        not deleted) with the reason as a warning, and the other deletions still happen."""
        try:
            Path(snapshot_location).unlink()
        except OSError as error:
            if self._on_delete_failure is None:
                raise
            self._on_delete_failure(snapshot_location, os_reason(error, snapshot_location))


def os_reason(error: OSError, path: str) -> str:
    """Why an operation on ``path`` failed: the system's words, and the other file it concerned
    (a folder that could not be created), never a temporary file's name."""
    reason = error.strerror or str(error)
    other = error.filename
    if other is None or str(other) == str(path) or Path(str(other)).name.startswith(f".{Path(path).name}."):
        return reason
    return f"{reason}: {other}"


def _is_recipe(test_location: PyTestLocation) -> bool:
    return hasattr(test_location.item, "snapshot_path")


def _snapshot_files(scopes: Iterable[Path]) -> Iterator[str]:
    found = {str(path) for scope in scopes if scope.is_dir() for path in scope.rglob("*" + SNAPSHOT_SUFFIX) if path.is_file()}
    yield from sorted(found)
