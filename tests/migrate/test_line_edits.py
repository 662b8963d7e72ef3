"""The edit buffer every YAML rule plans on (issue 47): edits on the original lines, applied once;
a later edit of a block absorbs the edits inside it; insertions at one place keep their order;
edits that cross each other are refused, nothing written."""

from __future__ import annotations

import pytest

from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.yaml.edits import LineEdits

LINES = ["a: 1\n", "b:\n", "  c: 2\n", "  d: 3\n", "e: 4\n"]


def test_a_block_rewritten_again_is_read_as_the_first_rewrite_left_it_and_absorbs_it() -> None:
    edits = LineEdits(list(LINES), source="r.yaml")
    edits.replace(2, 3, ["  c: 20\n"])
    assert edits.current(1, 4) == ["b:\n", "  c: 20\n", "  d: 3\n"]
    edits.replace(1, 4, ["x:\n", *("  " + line for line in edits.current(1, 4))])
    assert edits.text() == "a: 1\nx:\n  b:\n    c: 20\n    d: 3\ne: 4\n"


def test_insertions_at_one_place_keep_their_order_and_come_before_a_replacement_there() -> None:
    edits = LineEdits(list(LINES), source="r.yaml")
    edits.insert(4, ["f: 5\n"])
    edits.replace(4, 5, ["e: 40\n"])
    edits.insert(4, ["g: 6\n"])
    edits.insert(5, ["z: 0\n"])
    assert edits.text() == "a: 1\nb:\n  c: 2\n  d: 3\nf: 5\ng: 6\ne: 40\nz: 0\n"


def test_edits_that_cross_each_other_are_refused() -> None:
    edits = LineEdits(list(LINES), source="r.yaml")
    edits.replace(1, 3, ["b: {}\n"])
    with pytest.raises(MigrationError, match="two rewrites overlap at lines 3-4 and 2-3"):
        edits.replace(2, 4, ["  c: 0\n"])
    with pytest.raises(MigrationError, match="overlap"):
        edits.insert(2, ["  y: 1\n"])
