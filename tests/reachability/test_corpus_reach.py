"""Issue 25: every bundled recipe's committed snapshot carries a reachability section per data mix,
and the mixes mmfreeze cannot probe yet are exactly the ones listed here, each with its reason.

A new gap (a recipe of an architecture without a batch for one of its mixes) fails this test, and
so does a gap closed without removing it from the list: the list is the open work, in one place.
"""

from __future__ import annotations

from collections import defaultdict

from mmfreeze.models.probe.run import RAISES_ALIKE, SHRUNKEN
from mmfreeze.snapshots.format import parse_snapshot
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT

NO_BATCH_YET = {"Qwen2_5OmniThinkerForConditionalGeneration": {"text+audio"},
                "Qwen3OmniMoeThinkerForConditionalGeneration": {"text+audio"},
                "KimiK25VLForConditionalGeneration": {"text+image"},
                "LLaVAOneVision1_5_ForConditionalGeneration": {"text+image"}}
"""Architecture -> the mixes of its bundled recipes that have no synthetic batch yet: the framework's
own thinker-only Omni classes, Kimi-K2.5 and LLaVA-OneVision-1.5 (its RICE tower) take other inputs
than the transformers classes the batches were written for."""
META_RAISES = {"KimiK25VLForConditionalGeneration": {"text"}}
"""The framework's Kimi-K2.5 calls ``torch.nonzero`` in its forward, which has no meta kernel."""
SHRUNKEN_RAISES = {"MiniMaxM3SparseForConditionalGeneration": {"text+image"},
                   "Qwen3_5ForConditionalGeneration": {"text+image"},
                   "Qwen3_5MoeForConditionalGeneration": {"text", "text+image", "text+video"},
                   "Qwen3VLMoeForConditionalGeneration": {"text+image", "text+video"}}
"""The framework's own classes, rebuilt small on the CPU, raise where the transformers classes ran:
MiniMax-M3 has no ``_from_config``; Qwen3.5's linear attention keeps bf16 weights beside fp32
inputs; the Qwen3.5-MoE and Qwen3-VL-MoE multimodal forwards want inputs (rope indices, feature
counts) their CUDA path computes. Each snapshot says so for its mix; a probe closed here fails the test."""


def snapshots() -> dict[str, object]:
    found = {}
    for recipe in sorted(EXAMPLE_CONFIGS.rglob("*.yaml")):
        path = REPO_ROOT / "snapshots" / f"{recipe.relative_to(REPO_ROOT).as_posix()}.frozen.txt"
        if path.exists():
            found[recipe.relative_to(REPO_ROOT).as_posix()] = parse_snapshot(path.read_text(), source=str(path))
    return found


def test_every_snapshot_has_one_reachability_section_per_mix_its_header_names() -> None:
    found = snapshots()
    assert len(found) >= 80
    for recipe, snapshot in found.items():
        mixes = snapshot.header.mixes.partition(" (")[0].split(", ")
        assert [reach.mix for reach in snapshot.reach] == mixes, recipe


def test_the_mixes_not_probed_are_exactly_the_listed_gaps_each_with_its_reason() -> None:
    gaps: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for snapshot in snapshots().values():
        for reach in snapshot.reach:
            if reach.method:
                continue
            why = reach.not_probed
            kind = ("no batch" if why.startswith("mmfreeze has no ") else "raises" if why.startswith(RAISES_ALIKE)
                    else "shrunken raises" if why.startswith(f"{SHRUNKEN}: ")
                    else "meta raises" if why.startswith("meta-device forward: ") else why)
            gaps[kind][snapshot.header.architecture].add(reach.mix)
    expected = {"no batch": NO_BATCH_YET, "meta raises": META_RAISES, "shrunken raises": SHRUNKEN_RAISES}
    assert {kind: dict(found) for kind, found in gaps.items()} == {kind: found for kind, found in expected.items() if found}


def unreachable_groups(recipe: str, mix: str) -> dict[str, int]:
    [reach] = [reach for reach in snapshots()[f"example_configs/{recipe}"].reach if reach.mix == mix]
    return {group.label: group.tensors for group in reach.groups}


def test_the_llava_recipe_with_a_trainable_tower_lists_its_last_encoder_layer_and_post_layernorm_unreachable() -> None:
    """The issue's first real case as a bundled recipe (the probe itself: tests/reachability/test_probe.py)."""
    snapshot = snapshots()["example_configs/vlm_finetune/llava/llava_1_5_7b_tower_unfrozen_cord_v2.yaml"]
    [reach] = snapshot.reach
    assert (reach.mix, reach.method) == ("text+image", "FakeTensorMode forward at full size")
    assert snapshot.unreachable["text+image"] == {
        *(f"model.vision_tower.encoder.layers.23.{part}.{kind}"
          for part in ("self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj", "self_attn.out_proj",
                       "layer_norm1", "layer_norm2", "mlp.fc1", "mlp.fc2") for kind in ("weight", "bias")),
        "model.vision_tower.post_layernorm.weight", "model.vision_tower.post_layernorm.bias"}


def test_the_qwen2_5_vl_text_only_recipe_lists_its_whole_tower_and_merger_and_an_image_recipe_none() -> None:
    """Both recipes train the whole 7B tower and merger; only the batches differ."""
    assert unreachable_groups("vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_ultrachat_text_sft.yaml", "text") == {
        "model.visual (vision tower)": 385, "model.visual.merger (vision projector)": 5}
    image = snapshots()["example_configs/vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2_three_rates.yaml"]
    assert not any(name.startswith("model.visual.") for name in image.frozen)
    assert unreachable_groups("vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2_three_rates.yaml", "text+image") == {}


def test_the_qwen2_5_omni_recipe_lists_the_talker_and_token2wav_unreachable_from_the_thinkers_loss() -> None:
    """The av-mix recipe builds the whole Omni model (``force_hf: true``); the framework's own class,
    which the other Omni recipes train, is the thinker alone."""
    groups = unreachable_groups("audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_av_mix.yaml", "text+audio")
    assert groups["talker (audio generator)"] == 293 and groups["token2wav (audio generator)"] == 808
