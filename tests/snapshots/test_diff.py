from __future__ import annotations

from dataclasses import replace

import pytest

from mmfreeze.models.renames import RenameRule, Renames
from mmfreeze.models.lora import adapted_weight
from mmfreeze.snapshots.diff import HeaderChange, diff_snapshots
from mmfreeze.snapshots.format import GroupLines, ReachLines, Snapshot
from mmfreeze.resolver.labels import prefix_group
from tests.snapshots.test_format import HEADER, snapshot_of


def test_moved_names_are_grouped_with_counts_and_header_changes_listed() -> None:
    old = snapshot_of(HEADER, frozenset({"v.blocks.0.w", "v.blocks.1.w", "lm.w"}))
    new = snapshot_of(
        replace(HEADER, framework="nemo-automodel 0.6 (0.7 rejects freeze_config.freeze_embeddings)", frozen_tensors=2),
        frozenset({"v.blocks.0.w", "v.blocks.1.w", "proj.w"}),
    )
    change = diff_snapshots(old, new, numel_of={"proj.w": 6, "lm.w": 4}, group_of=prefix_group)
    assert change.header_changes == (
        HeaderChange(field="framework", old="nemo-automodel 0.7", new="nemo-automodel 0.6 (0.7 rejects freeze_config.freeze_embeddings)"),
        HeaderChange(field="frozen_tensors", old=3, new=2),
    )
    assert [(g.label, g.tensors, g.parameters, g.names) for g in change.newly_frozen] == [("proj", 1, 6, ("proj.w",))]
    assert [(g.label, g.names) for g in change.newly_trainable] == [("lm", ("lm.w",))]


def test_prefix_group_stops_at_the_first_layer_index() -> None:
    assert prefix_group("model.language_model.layers.3.mlp.up_proj.weight") == "model.language_model.layers"
    assert prefix_group("lm_head.weight") == "lm_head"
    assert prefix_group("bias") == "bias"


def test_adapters_are_grouped_by_the_label_of_the_weight_they_adapt_counting_0_parameters_once_removed() -> None:
    kept, removed, added = "lm.0.q.lora_A.weight", "v.0.q.lora_A.weight", "v.0.fc.lora_B.weight"
    old = snapshot_of(HEADER, frozenset({"v.0.q.weight"}), frozenset({kept, removed}))
    new = snapshot_of(HEADER, frozenset({"v.0.q.weight"}), frozenset({kept, added}))
    labels = {"v.0.q.weight": "v (vision tower)", "v.0.fc.weight": "v (vision tower)"}
    change = diff_snapshots(old, new, numel_of={added: 24, kept: 8}, group_of=lambda name: labels.get(name, name))
    assert change.newly_frozen == change.newly_trainable == ()
    assert [(g.label, g.tensors, g.parameters, g.names) for g in change.adapters_added] == [
        ("v (vision tower)", 1, 24, (added,))]
    assert [(g.label, g.tensors, g.parameters, g.names) for g in change.adapters_removed] == [
        ("v (vision tower)", 1, 0, (removed,))]


def test_a_snapshot_gaining_lora_lists_every_adapter_as_added() -> None:
    change = diff_snapshots(snapshot_of(HEADER, frozenset()), snapshot_of(HEADER, frozenset(), frozenset({"q.lora_A.weight"})),
                            numel_of={"q.lora_A.weight": 4}, group_of=prefix_group)
    assert [(g.label, g.parameters) for g in change.adapters_added] == [("q", 4)] and change.adapters_removed == ()


@pytest.mark.parametrize(("adapter", "weight"), [
    ("m.layers.0.q_proj.lora_A.weight", "m.layers.0.q_proj.weight"),
    ("m.layers.0.q_proj.lora_B.weight", "m.layers.0.q_proj.weight"),
    ("m.layers.0.q_proj.lora_magnitude", "m.layers.0.q_proj.weight"),
    ("m.layers.0.q_proj.weight", "m.layers.0.q_proj.weight"),
])
def test_adapted_weight_is_the_weight_of_the_module_holding_the_adapter(adapter: str, weight: str) -> None:
    assert adapted_weight(adapter) == weight


def test_a_removed_adapter_that_was_frozen_is_listed_as_removed_and_not_as_newly_trainable() -> None:
    """An exclude entry for a tower whose `freeze_config` froze its adapters: they are gone, not trainable."""
    frozen_adapter = "v.0.q.lora_A.weight"
    old = snapshot_of(HEADER, frozenset({"v.0.q.weight", frozen_adapter}), frozenset({frozen_adapter}))
    new = snapshot_of(HEADER, frozenset({"v.0.q.weight"}), frozenset())
    change = diff_snapshots(old, new, numel_of={}, group_of=prefix_group)
    assert change.newly_trainable == ()
    assert [(g.label, g.names) for g in change.adapters_removed] == [("v", (frozen_adapter,))]


@pytest.mark.parametrize(("header", "frozen", "adapters", "version_only"), [
    ({"transformers": "5.18.0"}, {"a.w"}, set(), True),
    ({"transformers": "5.18.0", "framework": "nemo-automodel 0.6"}, {"a.w"}, set(), True),
    ({}, {"a.w"}, set(), False),  # nothing moved at all
    ({"transformers": "5.18.0"}, {"b.w"}, set(), False),  # a frozen name moved
    ({"transformers": "5.18.0"}, {"a.w"}, {"q.lora_A.weight"}, False),  # an adapter was added
    ({"transformers": "5.18.0", "model_id": "org/other"}, {"a.w"}, set(), False),  # another header field
])
def test_a_change_is_version_only_when_only_release_fields_of_the_header_moved(
    header: dict[str, str], frozen: set[str], adapters: set[str], version_only: bool
) -> None:
    old = snapshot_of(HEADER, frozenset({"a.w"}))
    new = snapshot_of(replace(HEADER, **header), frozenset(frozen), frozenset(adapters) if adapters else None)
    change = diff_snapshots(old, new, numel_of={"a.w": 1, "b.w": 1, "q.lora_A.weight": 1}, group_of=prefix_group)
    assert change.version_only is version_only and not change.renamed_only


RENAMES_524 = Renames((RenameRule("t.visual", "t.model.visual"), RenameRule("t.model", "t.model.language_model")),
                      "transformers 5.24.0 conversion mapping")
"""A 5.24-style thinker: the checkpoint's ``t.visual`` and ``t.model`` nest under ``t.model``."""
NAMES_518 = {"t.visual.b.0.w": 4, "t.visual.b.1.w": 4, "t.model.layers.0.w": 8, "t.head.w": 2}
NAMES_524 = {"t.model.visual.b.0.w": 4, "t.model.visual.b.1.w": 4, "t.model.language_model.layers.0.w": 8, "t.head.w": 2}


def thinker(release: str, frozen: set[str]) -> Snapshot:
    snapshot = snapshot_of(replace(HEADER, transformers=release), frozenset(frozen))
    return replace(snapshot, renames=RENAMES_524 if release == "5.24.0" else Renames())


@pytest.mark.parametrize(("old", "new", "numel_of", "renamed", "reversed_"), [
    (thinker("5.24.0", {"t.model.visual.b.0.w", "t.model.visual.b.1.w"}), thinker("5.18.0", {"t.visual.b.0.w", "t.visual.b.1.w"}),
     NAMES_518, [("t.model.language_model.*", "t.model.*", 1), ("t.model.visual.*", "t.visual.*", 2)], True),
    (thinker("5.18.0", {"t.visual.b.0.w", "t.visual.b.1.w"}), thinker("5.24.0", {"t.model.visual.b.0.w", "t.model.visual.b.1.w"}),
     NAMES_524, [("t.model.*", "t.model.language_model.*", 1), ("t.visual.*", "t.model.visual.*", 2)], False),
], ids=["5.24-snapshot-checked-under-5.18", "5.18-snapshot-checked-under-5.24"])
def test_a_release_that_renamed_tensors_of_equal_trainability_is_renamed_not_changed(
    old: Snapshot, new: Snapshot, numel_of: dict[str, int], renamed: list[tuple[str, str, int]], reversed_: bool
) -> None:
    """Either way, the mapping is 5.24's: recorded in the stored snapshot and reversed, or the current one's."""
    change = diff_snapshots(old, new, numel_of=numel_of, group_of=prefix_group)
    assert change.renamed_only and not change.version_only and not change.moved
    assert [(g.stored, g.current, g.tensors) for g in change.renamed] == renamed
    assert all(g.mapping.startswith("transformers 5.24.0 conversion mapping") for g in change.renamed)
    assert all(("reversed" in g.mapping) is reversed_ for g in change.renamed)


def test_a_real_change_beside_renames_is_shown_under_the_current_name_with_the_stored_one_beside_it() -> None:
    old = thinker("5.24.0", {"t.model.visual.b.0.w", "t.model.visual.b.1.w"})
    new = thinker("5.18.0", {"t.visual.b.0.w"})
    change = diff_snapshots(old, new, numel_of=NAMES_518, group_of=prefix_group)
    assert not change.renamed_only and change.moved
    assert [(g.label, g.names) for g in change.newly_trainable] == [("t.visual.b", ("t.visual.b.1.w",))]
    assert change.stored_names == {"t.visual.b.1.w": "t.model.visual.b.1.w"}
    assert sum(g.tensors for g in change.renamed) == 3


def test_a_stored_name_no_mapping_reaches_is_reported_as_not_mapped() -> None:
    old = thinker("5.24.0", {"t.model.visual.b.0.w", "t.model.audio.w"})  # no rule knows t.model.audio
    new = thinker("5.18.0", {"t.visual.b.0.w"})
    change = diff_snapshots(old, new, numel_of=NAMES_518, group_of=prefix_group)
    assert [(g.label, g.tensors, g.parameters, g.names) for g in change.unmapped] == [
        ("t.model.audio", 1, 0, ("t.model.audio.w",))]
    assert change.newly_trainable == () and change.moved and not change.renamed_only


def test_a_tensor_whose_rate_moved_is_a_change_by_old_and_new_rate() -> None:
    from mmfreeze.snapshots.format import RateLines

    old = replace(snapshot_of(HEADER, frozenset({"v.w"})), rates=(RateLines(lr_mult=0.1, wd_mult=1.0, lines=("p.w",)),))
    new = replace(snapshot_of(HEADER, frozenset({"v.w"})),
                  rates=(RateLines(lr_mult=10.0, wd_mult=1.0, lines=("p.w", "q.w")),))
    change = diff_snapshots(old, new, numel_of={"v.w": 1, "p.w": 4, "q.w": 2, "r.w": 8}, group_of=prefix_group)
    assert change.moved and not change.version_only
    assert [(c.old, c.new, [(g.label, g.names) for g in c.groups]) for c in change.rate_changes] == [
        ((0.1, 1.0), (10.0, 1.0), [("p", ("p.w",))]),
        ((1.0, 1.0), (10.0, 1.0), [("q", ("q.w",))]),
    ]


def test_a_newly_trainable_tensor_is_not_also_a_rate_change() -> None:
    from mmfreeze.snapshots.format import RateLines

    old = snapshot_of(HEADER, frozenset({"v.w"}))
    new = replace(snapshot_of(HEADER, frozenset()), rates=(RateLines(lr_mult=0.1, wd_mult=1.0, lines=("v.w",)),))
    change = diff_snapshots(old, new, numel_of={"v.w": 1}, group_of=prefix_group)
    assert [g.names for g in change.newly_trainable] == [("v.w",)] and change.rate_changes == ()


def test_a_mix_whose_unreachable_tensors_moved_is_a_change_naming_both_directions() -> None:
    def with_reach(*reach: ReachLines) -> Snapshot:
        return replace(snapshot_of(HEADER, frozenset()), reach=reach)

    old = with_reach(ReachLines(mix="text", method="meta-device forward", groups=(
        GroupLines(label="v", tensors=2, lines=("v.0.w", "v.1.w")),)),
        ReachLines(mix="text+image", not_probed="no batch"))
    new = with_reach(ReachLines(mix="text", method="meta-device forward", groups=(
        GroupLines(label="v", tensors=1, lines=("v.1.w",)), GroupLines(label="p", tensors=1, lines=("p.w",)))),
        ReachLines(mix="text+image", method="FakeTensorMode forward at full size"))
    change = diff_snapshots(old, new, numel_of={"v.0.w": 4, "v.1.w": 4, "p.w": 2}, group_of=lambda name: name[0])
    assert change.moved
    text, image = change.reach_changes
    assert [(g.label, g.names) for g in text.newly_unreachable] == [("p", ("p.w",))]
    assert [(g.label, g.names) for g in text.newly_reached] == [("v", ("v.0.w",))]
    assert text.probe == ""
    assert image.probe == "not probed -> FakeTensorMode forward at full size" and not image.newly_unreachable
    assert diff_snapshots(new, new, numel_of={}, group_of=lambda name: name).reach_changes == ()


def test_a_mix_probed_before_and_not_now_is_a_change_of_method_only_never_a_newly_reached_tensor() -> None:
    """Llama-4 across the supported releases: 5.18 probes its text mix, 5.24's forward raises. The
    stored unreachable tensors are not reached now: they are unknown, and the report says only that."""
    def with_reach(reach: ReachLines) -> Snapshot:
        return replace(snapshot_of(HEADER, frozenset()), reach=(reach,))

    probed = with_reach(ReachLines(mix="text", method="meta-device forward", groups=(
        GroupLines(label="p", tensors=1, lines=("p.w",)),)))
    lost = with_reach(ReachLines(mix="text", not_probed="the forward raises under every method: AttributeError: x"))
    for old, new, probe in ((probed, lost, "meta-device forward -> not probed"),
                            (lost, probed, "not probed -> meta-device forward")):
        change = diff_snapshots(old, new, numel_of={"p.w": 2}, group_of=lambda name: name[0])
        [reach] = change.reach_changes
        assert change.moved and reach.probe == probe
        assert reach.newly_reached == () and reach.newly_unreachable == ()
