from __future__ import annotations

from dataclasses import replace

import pytest

from mmfreeze.exceptions import SnapshotError
from mmfreeze.models.renames import RenameRule, Renames
from mmfreeze.snapshots.format import (
    ADAPTERS_SECTION,
    FORMAT_VERSION,
    RENAMES_SECTION,
    GroupLines,
    ReachLines,
    Snapshot,
    SnapshotHeader,
    body_lines,
    parse_snapshot,
    render_snapshot,
)

HEADER = SnapshotHeader(
    recipe="example_configs/vlm/x.yaml", model_id="org/model", config="registry (published)", architecture="LlavaForConditionalGeneration",
    framework="nemo-automodel 0.7", transformers="5.24.0", frozen_tensors=3, trainable_tensors=1, frozen_parameters=30, trainable_parameters=10,
)


def snapshot_of(header: SnapshotHeader, names: frozenset[str], adapters: frozenset[str] | None = None) -> Snapshot:
    stored_adapters = None if adapters is None else body_lines(adapters, recipe=header.recipe)
    return Snapshot(header=header, lines=body_lines(names, recipe=header.recipe), adapter_lines=stored_adapters)


SNAPSHOT = snapshot_of(HEADER, frozenset({"a.layers.0.w", "a.layers.1.w", "lm_head.weight"}))
ADAPTERS = frozenset({"a.layers.0.q.lora_A.weight", "a.layers.1.q.lora_A.weight", "a.layers.0.q.lora_B.weight"})
LORA_SNAPSHOT = snapshot_of(HEADER, SNAPSHOT.frozen, ADAPTERS)


def test_render_then_parse_round_trips() -> None:
    assert parse_snapshot(render_snapshot(SNAPSHOT)) == SNAPSHOT


def test_rendered_file_has_versioned_header_then_sorted_compressed_names() -> None:
    text = render_snapshot(SNAPSHOT)
    assert text.splitlines()[1] == f"format: {FORMAT_VERSION}"
    assert text.endswith("---\na.layers.{0..1}.w\nlm_head.weight\n")


def test_empty_frozen_set_round_trips() -> None:
    empty = snapshot_of(HEADER, frozenset())
    assert parse_snapshot(render_snapshot(empty)) == empty


def test_a_snapshot_without_lora_has_no_adapter_section_and_reads_back_none() -> None:
    assert ADAPTERS_SECTION not in render_snapshot(SNAPSHOT)
    assert parse_snapshot(render_snapshot(SNAPSHOT)).adapter_lines is None


def test_adapter_names_follow_the_frozen_names_under_their_section_line_compressed() -> None:
    assert render_snapshot(LORA_SNAPSHOT).endswith(
        "---\na.layers.{0..1}.w\nlm_head.weight\n--- lora adapters\n"
        "a.layers.0.q.lora_B.weight\na.layers.{0..1}.q.lora_A.weight\n"
    )


@pytest.mark.parametrize(("frozen", "adapters"), [
    (SNAPSHOT.frozen, ADAPTERS), (frozenset(), ADAPTERS), (SNAPSHOT.frozen, frozenset()), (frozenset(), frozenset()),
], ids=["both", "no-frozen-name", "empty-adapter-section", "both-empty"])
def test_a_snapshot_with_an_adapter_section_round_trips_with_its_names(
    frozen: frozenset[str], adapters: frozenset[str]
) -> None:
    snapshot = snapshot_of(HEADER, frozen, adapters)
    parsed = parse_snapshot(render_snapshot(snapshot))
    assert parsed == snapshot and parsed.frozen == frozen and parsed.adapters == adapters
    assert parsed.adapter_lines is not None  # an empty section is kept: the recipe has `peft:`


@pytest.mark.parametrize("section", ["--- lora adapters", "--- other names"], ids=["repeated", "unknown"])
def test_a_second_or_unknown_section_line_is_a_snapshot_error_naming_it(section: str) -> None:
    text = render_snapshot(LORA_SNAPSHOT) + f"{section}\nx.lora_A.weight\n"
    with pytest.raises(SnapshotError, match=f"in that order and once each; found .*'{section}'"):
        parse_snapshot(text, source="snap.txt")


RENAMES = Renames((RenameRule("visual", "model.visual"), RenameRule("model", "model.language_model"),
                   RenameRule("lm_head.w", "head.w", prefix=False)), "transformers 5.24.0 conversion mapping")


def test_checkpoint_renames_follow_every_name_sorted_and_round_trip() -> None:
    from dataclasses import replace

    snapshot = replace(LORA_SNAPSHOT, renames=RENAMES)
    text = render_snapshot(snapshot)
    assert text.endswith(f"{RENAMES_SECTION}: transformers 5.24.0 conversion mapping\nlm_head.w -> head.w\nmodel.* -> model.language_model.*\n"
                         "visual.* -> model.visual.*\n")
    assert parse_snapshot(text) == snapshot
    assert ADAPTERS_SECTION in text.split(RENAMES_SECTION)[0]  # adapters first


def test_a_model_without_renames_has_no_renames_section() -> None:
    assert RENAMES_SECTION not in render_snapshot(SNAPSHOT)


def test_renames_before_the_adapters_are_a_snapshot_error() -> None:
    text = render_snapshot(SNAPSHOT) + f"{RENAMES_SECTION}: x\nvisual.* -> model.visual.*\n{ADAPTERS_SECTION}\nq.lora_A.w\n"
    with pytest.raises(SnapshotError, match="in that order and once each"):
        parse_snapshot(text, source="snap.txt")


@pytest.mark.parametrize("line", ["visual.* model.visual.*", "visual.* -> model.visual", " -> x"])
def test_a_bad_rename_line_is_a_snapshot_error_showing_the_shapes(line: str) -> None:
    text = render_snapshot(SNAPSHOT) + f"{RENAMES_SECTION}: x\n{line}\n"
    with pytest.raises(SnapshotError, match=r"'--- checkpoint renames': a rename is `checkpoint\.\* -> model\.\*`"):
        parse_snapshot(text, source="snap.txt")


def test_a_name_starting_with_the_section_marker_cannot_be_stored() -> None:
    with pytest.raises(SnapshotError, match="starts a section"):
        body_lines(frozenset({"--- lora adapters"}), recipe="r.yaml")


@pytest.mark.parametrize("version", [0, 3, 4], ids=["format-0", "format-3-without-adapter-names", "format-4-without-renames"])
def test_another_format_version_is_rejected_with_the_fix(version: int) -> None:
    text = render_snapshot(SNAPSHOT).replace(f"format: {FORMAT_VERSION}", f"format: {version}")
    with pytest.raises(SnapshotError, match="regenerate it with --update"):
        parse_snapshot(text, source="snap.txt")


def test_names_with_line_breaks_cannot_be_stored() -> None:
    with pytest.raises(SnapshotError):
        render_snapshot(snapshot_of(HEADER, frozenset({"a\nb"})))


@pytest.mark.parametrize(
    ("kind", "provenance", "described"),
    [("registry", "checkpoint", "registry (published)"), ("registry", "partial", "registry (partial)"),
     ("registry", "transformers-default", "registry (default)"), ("hf-cache", None, "hf-cache"), ("hub", None, "hub"),
     ("configs", "hub", "configs (hub)"), ("configs", "hf-cache", "configs (hf-cache)"), ("configs", None, "configs (local)"),
     ("local", None, "local")],
)
def test_the_config_source_says_how_faithful_the_config_is(kind: str, provenance: str | None, described: str) -> None:
    from mmfreeze.snapshots.format import describe_config_source

    assert describe_config_source(kind, provenance) == described


def test_rates_follow_the_adapters_one_section_per_rate_sorted_and_round_trip() -> None:
    from dataclasses import replace

    from mmfreeze.snapshots.format import RateLines

    rates = (RateLines(lr_mult=10.0, wd_mult=1.0, lines=("a.proj.w",)),
             RateLines(lr_mult=0.1, wd_mult=0.0, lines=("a.layers.{0..1}.w",)))
    snapshot = replace(LORA_SNAPSHOT, rates=rates, renames=RENAMES)
    text = render_snapshot(snapshot)
    body = text.split("\n---\n", 1)[1]
    assert body.index("--- lora adapters") < body.index("--- rate: lr_mult 0.1, wd_mult 0\na.layers.{0..1}.w\n") \
        < body.index("--- rate: lr_mult 10, wd_mult 1\na.proj.w\n") < body.index("--- checkpoint renames")
    parsed = parse_snapshot(text)
    assert parsed.rate_of == {"a.layers.0.w": (0.1, 0.0), "a.layers.1.w": (0.1, 0.0), "a.proj.w": (10.0, 1.0)}
    assert parsed == replace(snapshot, rates=tuple(sorted(rates, key=lambda rate: rate.lr_mult)))


@pytest.mark.parametrize("title", ["--- rate: lr 0.1", "--- rate: lr_mult 0.1, wd_mult 1\nx\n--- rate: lr_mult 0.1, wd_mult 1"])
def test_a_malformed_or_repeated_rate_section_is_a_snapshot_error(title: str) -> None:
    text = render_snapshot(SNAPSHOT) + f"{title}\nx\n"
    with pytest.raises(SnapshotError, match="in that order and once each"):
        parse_snapshot(text, source="snap.txt")


REACH = (
    ReachLines(mix="text", method="meta-device forward", groups=(
        GroupLines(label="model.visual (vision tower)", tensors=3, lines=("model.visual.blocks.{0..1}.w", "model.visual.merger.w")),
        GroupLines(label="language model: lm_head", tensors=1, lines=("lm_head.weight",)))),
    ReachLines(mix="text+image", method="FakeTensorMode forward at full size"),
    ReachLines(mix="text+video", not_probed="mmfreeze has no text+video batch for X yet"),
)


def test_unreachable_sections_follow_the_rates_grouped_by_module_and_round_trip() -> None:
    snapshot = replace(SNAPSHOT, header=replace(HEADER, mixes="text, text+image, text+video (unknown, so every plausible one)"),
                       reach=REACH)
    text = render_snapshot(snapshot)
    assert text.endswith(
        "--- unreachable: text, meta-device forward: 4 tensors\n"
        "model.visual (vision tower): 3 tensors\n"
        "  model.visual.blocks.{0..1}.w\n"
        "  model.visual.merger.w\n"
        "language model: lm_head: 1 tensor\n"
        "  lm_head.weight\n"
        "--- unreachable: text+image, FakeTensorMode forward at full size: none\n"
        "--- unreachable: text+video: not probed (mmfreeze has no text+video batch for X yet)\n")
    assert "\nmixes: text, text+image, text+video (unknown, so every plausible one)\n" in text
    parsed = parse_snapshot(text)
    assert parsed == snapshot
    assert parsed.unreachable == {"text": {"model.visual.blocks.0.w", "model.visual.blocks.1.w", "model.visual.merger.w",
                                           "lm_head.weight"}, "text+image": frozenset()}


def test_an_unreachable_name_outside_a_module_group_is_a_snapshot_error() -> None:
    text = render_snapshot(SNAPSHOT) + "--- unreachable: text, meta-device forward: 1 tensor\n  lm_head.weight\n"
    with pytest.raises(SnapshotError, match="expected `<module>: <n> tensors` and its names indented"):
        parse_snapshot(text, source="s.txt")
