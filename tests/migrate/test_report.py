"""The migrate report as a pull-request comment: bounded, every file named, counts in tensors."""

from __future__ import annotations

from mmfreeze.migrate.report import FileResult, file_lines, render_markdown


def _changed(index: int) -> FileResult:
    groups = {f"vision.tower model.visual.blocks.{i}": 12 for i in range(60)}
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


def test_counts_are_tensors() -> None:
    assert "newly trainable: 720 tensors" in file_lines(_changed(0))
