"""The migrate report as a pull-request comment: bounded, every file named, counts in tensors and parameters."""

from __future__ import annotations

import json

from mmfreeze.migrate.report import FileResult, file_lines, render_json, render_markdown
from mmfreeze.resolver.labels import ModuleGroup


def _changed(index: int) -> FileResult:
    groups = tuple(ModuleGroup(label=f"model.visual.blocks.{i:02} (vision tower)", tensors=12, parameters=4_718_592,
                               names=tuple(f"model.visual.blocks.{i:02}.w{j}" for j in range(12))) for i in range(60))
    return FileResult(display=f"recipes/r_{index:03}.yaml", old_text="a", new_text="b", status="changed",
                      rules=("MF001",), newly_trainable=groups)


def test_a_report_too_long_for_one_comment_keeps_every_file_row_and_says_what_it_left_out() -> None:
    results = [_changed(i) for i in range(120)]
    whole = render_markdown(results, mode="intent", limit=None)
    comment = render_markdown(results, mode="intent")
    assert len(whole) > 65_536 >= len(comment)
    assert all(f"| `recipes/r_{i:03}.yaml` | changed |" in comment for i in range(120))
    left_out = 120 - comment.count("### `recipes/")
    assert 0 < left_out and f"Details of {left_out} more items are left out" in comment
    assert whole.count("### `recipes/") == 120


def test_each_item_counts_tensors_and_parameters() -> None:
    """A group and the total say "N tensors / M parameters", M the scalar count (product of shapes)."""
    lines = file_lines(_changed(0))
    assert "newly trainable: 720 tensors / 283M parameters" in lines
    assert "  model.visual.blocks.07 (vision tower): 12 tensors / 4.72M parameters" in lines


def test_json_keeps_both_counts_exact() -> None:
    files = json.loads(render_json([_changed(0)], mode="intent"))["files"]
    assert files[0]["newly_trainable"]["model.visual.blocks.00 (vision tower)"] == {"tensors": 12, "parameters": 4_718_592}


def test_files_with_nothing_to_report_are_counted_not_listed() -> None:
    quiet = [FileResult(display=f"train_{i}.py", old_text="x", new_text="x", status="unchanged") for i in range(3)]
    comment = render_markdown([_changed(0), *quiet], mode="intent")
    assert "| `recipes/r_000.yaml` | changed |" in comment and "train_0.py" not in comment
    assert "1 changed, 3 unchanged" in comment
    assert "3 unchanged files with nothing to report are counted above, not listed." in comment
