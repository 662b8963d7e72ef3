from __future__ import annotations

import pytest

from mmfreeze.exceptions import SnapshotError
from mmfreeze.snapshots.format import FORMAT_VERSION, Snapshot, SnapshotHeader, body_lines, parse_snapshot, render_snapshot

HEADER = SnapshotHeader(
    recipe="example_configs/vlm/x.yaml", model_id="org/model", config="registry (published)", architecture="LlavaForConditionalGeneration",
    framework="nemo-automodel 0.7", transformers="5.24.0", frozen_tensors=3, trainable_tensors=1, frozen_parameters=30, trainable_parameters=10,
)


def snapshot_of(header: SnapshotHeader, names: frozenset[str]) -> Snapshot:
    return Snapshot(header=header, lines=body_lines(names, recipe=header.recipe))


SNAPSHOT = snapshot_of(HEADER, frozenset({"a.layers.0.w", "a.layers.1.w", "lm_head.weight"}))


def test_render_then_parse_round_trips() -> None:
    assert parse_snapshot(render_snapshot(SNAPSHOT)) == SNAPSHOT


def test_rendered_file_has_versioned_header_then_sorted_compressed_names() -> None:
    text = render_snapshot(SNAPSHOT)
    assert text.splitlines()[1] == f"format: {FORMAT_VERSION}"
    assert text.endswith("---\na.layers.{0..1}.w\nlm_head.weight\n")


def test_empty_frozen_set_round_trips() -> None:
    empty = snapshot_of(HEADER, frozenset())
    assert parse_snapshot(render_snapshot(empty)) == empty


def test_another_format_version_is_rejected_with_the_fix() -> None:
    text = render_snapshot(SNAPSHOT).replace(f"format: {FORMAT_VERSION}", "format: 0")
    with pytest.raises(SnapshotError, match="regenerate it with --update"):
        parse_snapshot(text, source="snap.txt")


def test_names_with_line_breaks_cannot_be_stored() -> None:
    with pytest.raises(SnapshotError):
        render_snapshot(snapshot_of(HEADER, frozenset({"a\nb"})))


@pytest.mark.parametrize(
    ("kind", "provenance", "described"),
    [("registry", "checkpoint", "registry (published)"), ("registry", "partial", "registry (partial)"),
     ("registry", "transformers-default", "registry (default)"), ("hf-cache", None, "hf-cache (published)"),
     ("local", None, "local")],
)
def test_the_config_source_says_how_faithful_the_config_is(kind: str, provenance: str | None, described: str) -> None:
    from mmfreeze.snapshots.format import describe_config_source

    assert describe_config_source(kind, provenance) == described
