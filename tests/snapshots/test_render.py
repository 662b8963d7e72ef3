from __future__ import annotations

import json

from mmfreeze.distributed.native import NativeSupport
from mmfreeze.resolver.labels import ModuleGroup
from mmfreeze.snapshots.diff import HeaderChange, RecipeChange
from mmfreeze.snapshots.render import render_json, render_markdown, render_text
from mmfreeze.snapshots.results import Orphan, RecipeOutcome

CHANGE = RecipeChange(
    recipe="cfg/a|b.yaml",
    header_changes=(HeaderChange(field="framework", old="nemo-automodel 0.6 (0.7 rejects freeze_config.freeze_embeddings)", new="nemo-automodel 0.7"),),
    newly_frozen=(ModuleGroup(label="model.vision_tower (vision tower)", tensors=2, parameters=12,
                              names=("model.vision_tower.layers.0.w", "model.vision_tower.layers.1.w")),),
    newly_trainable=(),
)
OUTCOMES = [
    RecipeOutcome(recipe="cfg/a|b.yaml", snapshot="snapshots/cfg/a|b.yaml.frozen.txt", status="changed", change=CHANGE),
    RecipeOutcome(recipe="cfg/ok.yaml", snapshot="snapshots/cfg/ok.yaml.frozen.txt", status="passed"),
]
ORPHANS = [Orphan(snapshot="snapshots/cfg/gone.yaml.frozen.txt", recipe="cfg/gone.yaml", deleted=False)]


def test_markdown_puts_the_summary_table_before_folded_details() -> None:
    text = render_markdown(OUTCOMES, ORPHANS)
    assert text.index("| recipe | status |") < text.index("<details>")
    assert "`cfg/a&#124;b.yaml`" in text  # a `|` in a path does not break the table
    assert "model.vision_tower.layers.{0..1}.w" in text and "cfg/gone.yaml" in text


def test_text_names_the_recipe_the_group_counts_and_the_orphan() -> None:
    text = render_text(OUTCOMES, ORPHANS)
    assert "cfg/a|b.yaml: changed" in text and "newly frozen: 2 tensors / 12 parameters" in text
    assert "cfg/ok.yaml" not in text and "recipe cfg/gone.yaml is gone" in text


def test_json_has_counts_and_full_names() -> None:
    data = json.loads(render_json(OUTCOMES, ORPHANS))
    assert data["summary"]["changed"] == 1 and data["summary"]["orphaned"] == 1
    assert data["recipes"][0]["change"]["newly_frozen"][0]["names"] == list(CHANGE.newly_frozen[0].names)


def _many_changes(count: int) -> list[RecipeOutcome]:
    names = tuple(f"model.vision_tower.blocks.{i}.mlp.fc{j}.weight" for i in range(40) for j in range(8))
    group = ModuleGroup(label="model.vision_tower (vision tower)", tensors=len(names), parameters=10**9, names=names)
    return [
        RecipeOutcome(recipe=f"cfg/recipe_{i:03}.yaml", snapshot=f"snapshots/cfg/recipe_{i:03}.yaml.frozen.txt",
                      status="changed", change=RecipeChange(recipe=f"cfg/recipe_{i:03}.yaml", header_changes=(),
                                                            newly_frozen=(group,), newly_trainable=()))
        for i in range(count)
    ]


def test_a_markdown_report_too_long_for_a_pull_request_comment_keeps_every_summary_row_and_says_what_it_left_out() -> None:
    outcomes = _many_changes(200)
    whole = render_markdown(outcomes, [], limit=None)
    comment = render_markdown(outcomes, [])
    assert len(whole) > 65_536 >= len(comment)
    assert all(f"`cfg/recipe_{i:03}.yaml`" in comment for i in range(200))
    left_out = 200 - comment.count("<details>")
    assert 0 < left_out < 200 and f"Details of {left_out} more items are left out" in comment
    assert "--report-file" in comment and whole.count("<details>") == 200


def test_counts_say_tensors_and_parameters() -> None:
    assert "2 tensors / 12 parameters" in render_text(OUTCOMES, ORPHANS)


NATIVE_OUTCOMES = [
    RecipeOutcome(recipe="cfg/new.yaml", snapshot="s/new", status="changed", change=CHANGE,
                  nemo_automodel=NativeSupport(verdict="needs the integration", keys=("freeze_config.vision",))),
    RecipeOutcome(recipe="cfg/old.yaml", snapshot="s/old", status="passed", nemo_automodel=NativeSupport(verdict="native")),
    RecipeOutcome(recipe="cfg/other.yaml", snapshot="s/other", status="passed", nemo_automodel=NativeSupport(verdict="native")),
]


def test_every_report_says_how_nemo_automodel_runs_the_recipes() -> None:
    summary = "nemo-automodel 0.7: 2 run natively, 1 needs mmfreeze's runtime integration (`mmfreeze train`)"
    text = render_text(NATIVE_OUTCOMES, [])
    assert "cfg/new.yaml: changed" in text and "  nemo-automodel 0.7: needs the integration (freeze_config.vision)" in text
    assert text.splitlines()[-1] == summary
    markdown = render_markdown(NATIVE_OUTCOMES, [])
    assert "| needs the integration (freeze_config.vision) |" in markdown and summary in markdown
    data = json.loads(render_json(NATIVE_OUTCOMES, []))
    assert data["summary"]["nemo_automodel"] == {"native": 2, "needs the integration": 1, "rejected by nemo-automodel 0.7": 0}
    assert [r["nemo_automodel"] for r in data["recipes"]] == [
        {"verdict": "needs the integration", "keys": ["freeze_config.vision"]},
        {"verdict": "native", "keys": []}, {"verdict": "native", "keys": []}]


def test_a_changed_row_whose_frozen_names_did_not_move_says_what_did() -> None:
    """A LoRA exclude removes adapters (trainable, not listed by name): the row is not 0 / 0."""
    counts = RecipeChange(recipe="cfg/lora.yaml", newly_frozen=(), newly_trainable=(), header_changes=(
        HeaderChange(field="trainable_tensors", old=542, new=302),
        HeaderChange(field="trainable_parameters", old=47_185_920, new=26_214_400)))
    row = next(line for line in render_markdown(
        [RecipeOutcome(recipe="cfg/lora.yaml", snapshot="s", status="changed", change=counts)], []).splitlines()
        if line.startswith("| `cfg/lora.yaml`"))
    assert "0 tensors / 0 parameters" not in row
    assert ("| no frozen name moved | header: trainable_tensors 542 → 302; "
            "trainable_parameters 47185920 → 26214400 |") in row


VISION_ADAPTERS = tuple(f"model.visual.blocks.{i}.attn.qkv.lora_{ab}.weight" for i in range(120) for ab in "AB")
LORA_EXCLUDE = RecipeChange(
    recipe="cfg/lora.yaml", newly_frozen=(), newly_trainable=(),
    header_changes=(HeaderChange(field="trainable_tensors", old=542, new=302),),
    adapters_removed=(ModuleGroup(label="model.visual (vision tower)", tensors=240, parameters=0, names=VISION_ADAPTERS),),
)
LORA_OUTCOMES = [RecipeOutcome(recipe="cfg/lora.yaml", snapshot="s", status="changed", change=LORA_EXCLUDE)]


def test_a_changed_row_whose_only_moves_are_adapters_names_their_tensors_before_the_header_fields() -> None:
    row = next(line for line in render_markdown(LORA_OUTCOMES, []).splitlines() if line.startswith("| `cfg/lora.yaml`"))
    assert "| no frozen name moved | adapters removed: 240 tensors<br>header: trainable_tensors 542 → 302 |" in row


def test_text_lists_removed_adapters_by_module_with_counts_and_compressed_names() -> None:
    assert render_text(LORA_OUTCOMES, []).splitlines()[1:] == [
        "  trainable_tensors: 542 -> 302",
        "  adapters removed: 240 tensors / 0 parameters",
        "    model.visual (vision tower): 240 tensors / 0 parameters",
        "      model.visual.blocks.{0..119}.attn.qkv.lora_A.weight",
        "      model.visual.blocks.{0..119}.attn.qkv.lora_B.weight",
    ]


def test_markdown_details_have_a_lora_adapters_removed_table_with_the_module_and_counts() -> None:
    markdown = render_markdown(LORA_OUTCOMES, [])
    details = markdown[markdown.index("<details>"):]
    assert "**LoRA adapters removed**\n\n| module | tensors | parameters |" in details
    assert "| `model.visual (vision tower)` | 240 | 0 |" in details and "LoRA adapters added" not in details


def test_json_has_the_adapter_groups_with_full_names() -> None:
    change = json.loads(render_json(LORA_OUTCOMES, []))["recipes"][0]["change"]
    assert change["adapters_added"] == []
    assert change["adapters_removed"] == [{"label": "model.visual (vision tower)", "tensors": 240, "parameters": 0,
                                           "names": list(VISION_ADAPTERS)}]
