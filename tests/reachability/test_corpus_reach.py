"""Issue 25: every bundled recipe's committed snapshot carries a reachability section per data mix,
and the mixes mmfreeze cannot probe yet are exactly the ones listed here, each with its reason.

A new gap (a recipe of an architecture without a batch for one of its mixes) fails this test, and
so does a gap closed without removing it from the list: the list is the open work, in one place.
"""

from __future__ import annotations

from collections import defaultdict

from mmfreeze.snapshots.format import parse_snapshot
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT

NO_BATCH_YET = {
    "Ernie4_5_VLMoeForConditionalGeneration": {"text+image"},
    "Gemma3nForConditionalGeneration": {"text+image", "text+audio"},
    "Gemma4ForConditionalGeneration": {"text+image", "text+video", "text+audio"},
    "Kimi_K25ForConditionalGeneration": {"text+image", "text+video"},
    "Llama4ForConditionalGeneration": {"text+image"},
    "LlavaNextForConditionalGeneration": {"text+image"},
    "LlavaOnevisionForConditionalGeneration": {"text+image", "text+video"},
    "MllamaForConditionalGeneration": {"text+image"},
    "MuseGlimmerForConditionalGeneration": {"text+image"},
    "Phi4MultimodalForCausalLM": {"text+image", "text+audio"},
    "Qwen2_5OmniForConditionalGeneration": {"text+image", "text+video"},
    "Qwen3OmniMoeForConditionalGeneration": {"text+audio"},
}
"""Architecture -> the mixes of its bundled recipes that have no synthetic batch yet."""
FORWARD_RAISES = {"Llama4ForConditionalGeneration": {"text"}}
"""transformers 5.24.0's Llama-4 forward raises on every call (it copies ``image_outputs`` from its
language model's output, which has none); 5.18.0's runs (tests/cli/test_release_renames.py)."""
COMPOSITES = {"Gemma4WithDrafter": {"text+image"}}
"""A composite's parts are not probed yet."""


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
            kind = ("no batch" if why.startswith("mmfreeze has no ") or "takes no" in why
                    else "raises" if why.startswith("the forward raises under every method")
                    else "composite" if "composite" in why else why)
            gaps[kind][snapshot.header.architecture].add(reach.mix)
    assert {kind: dict(found) for kind, found in gaps.items()} == {
        "no batch": NO_BATCH_YET, "raises": FORWARD_RAISES, "composite": COMPOSITES}
