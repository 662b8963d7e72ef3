"""The syrupy extension: one text file per recipe, at the path :mod:`layout` gives.

syrupy does the comparing, writing, diffing and unused-snapshot accounting; this class only says
where a recipe's file is and which files are ours. A recipe's test location is a
:class:`~mmfreeze.snapshots.plugin.RecipeItem`, which carries its snapshot path and the run's
snapshot folder. syrupy also offers every other collected test of a session to every extension
(to find unused snapshots); for those this extension owns nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from syrupy.data import SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from mmfreeze.snapshots.layout import SNAPSHOT_SUFFIX, recipe_path

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import SnapshotIndex


class RecipeSnapshotExtension(SingleFileSnapshotExtension):
    file_extension = SNAPSHOT_SUFFIX.removeprefix(".")
    _write_mode = WriteMode.TEXT

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
        discovered = SnapshotCollections()
        if not _is_recipe(test_location):
            return discovered
        for filepath in _snapshot_files(Path(self.discovery_dirname(test_location=test_location))):
            if self.owns_snapshot_collection(filepath=filepath, test_location=test_location):
                discovered.add(self.read_snapshot_collection(snapshot_location=filepath))
        return discovered


def _is_recipe(test_location: PyTestLocation) -> bool:
    return hasattr(test_location.item, "snapshot_path")


def _snapshot_files(root: Path) -> Iterator[str]:
    if root.is_dir():
        yield from sorted(str(path) for path in root.rglob("*" + SNAPSHOT_SUFFIX) if path.is_file())
