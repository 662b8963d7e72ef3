"""The framework's own multimodal classes, built on meta the framework's way from a bundled config,
resolve through the table: path, modality and role of every multimodal module (issue #16, point 6).

Runs where the framework is importable with its transformers (``.venv-framework``, ``.ci/framework_env``).
"""

from __future__ import annotations

import pytest

from benchmarks.resolver_checks import verify_framework_architecture
from mmfreeze.models.framework import choose_builder

pytestmark = [
    pytest.mark.framework,
    pytest.mark.skipif(choose_builder("auto").kind != "framework",
                       reason="needs nemo-automodel with the transformers it requires (.venv-framework)"),
]

V, A = "vision", "audio"
EXPECTED: dict[str, tuple[str, set[tuple[str, str, str]]]] = {
    # architectures[0] of the config -> (the framework's class, its resolved multimodal modules)
    "Qwen2_5OmniForConditionalGeneration": ("Qwen2_5OmniThinkerForConditionalGeneration", {
        ("visual", V, "tower"), ("visual.merger", V, "projector"),
        ("audio_tower", A, "tower"), ("audio_tower.proj", A, "projector"),
    }),
    "Qwen3OmniMoeForConditionalGeneration": ("Qwen3OmniMoeThinkerForConditionalGeneration", {
        ("visual", V, "tower"), ("visual.merger", V, "projector"), ("visual.merger_list", V, "projector"),
        ("audio_tower", A, "tower"), ("audio_tower.proj1", A, "projector"), ("audio_tower.proj2", A, "projector"),
    }),
    "Qwen3_5ForConditionalGeneration": ("Qwen3_5ForConditionalGeneration", {
        ("model.visual", V, "tower"), ("model.visual.merger", V, "projector"),
    }),
    "Qwen3_5MoeForConditionalGeneration": ("Qwen3_5MoeForConditionalGeneration", {
        ("model.visual", V, "tower"), ("model.visual.merger", V, "projector"),
    }),
    "Qwen3VLForConditionalGeneration": ("Qwen3VLForConditionalGeneration", {
        ("model.visual", V, "tower"), ("model.visual.merger", V, "projector"),
        ("model.visual.deepstack_merger_list", V, "projector"),
    }),
    "Qwen3VLMoeForConditionalGeneration": ("Qwen3VLMoeForConditionalGeneration", {
        ("model.visual", V, "tower"), ("model.visual.merger", V, "projector"),
        ("model.visual.deepstack_merger_list", V, "projector"),
    }),
    "Gemma4ForConditionalGeneration": ("Gemma4ForConditionalGeneration", {
        ("model.vision_tower", V, "tower"), ("model.embed_vision", V, "embedder"),
        ("model.audio_tower", A, "tower"), ("model.embed_audio", A, "embedder"),
    }),
    "KimiK25ForConditionalGeneration": ("KimiK25VLForConditionalGeneration", {
        ("model.vision_tower", V, "tower"), ("model.multi_modal_projector", V, "projector"),
    }),
    "KimiVLForConditionalGeneration": ("KimiVLForConditionalGeneration", {
        ("model.vision_tower", V, "tower"), ("model.multi_modal_projector", V, "projector"),
    }),
    "LLaVAOneVision1_5_ForConditionalGeneration": ("LLaVAOneVision1_5_ForConditionalGeneration", {
        ("model.visual", V, "tower"), ("model.visual.merger", V, "projector"),
    }),
    "MuseGlimmerForConditionalGeneration": ("MuseGlimmerForConditionalGeneration", {
        ("model.vision_encoder", V, "tower"), ("model.vision_adapter", V, "projector"),
        ("model.vision_projection", V, "projector"),
    }),
    "MiniMaxM3SparseForConditionalGeneration": ("MiniMaxM3SparseForConditionalGeneration", {
        ("vision_tower", V, "tower"), ("vision_tower.multi_modal_projector", V, "projector"),
        ("vision_tower.patch_merge_mlp", V, "projector"),
    }),
    "Gemma4UnifiedForConditionalGeneration": ("Gemma4UnifiedForConditionalGeneration", {
        ("model.embed_vision", V, "embedder"), ("model.embed_audio", A, "embedder"),
    }),
    "Glm5NextForConditionalGeneration": ("Glm5NextForConditionalGeneration", {
        ("model.visual", V, "tower"), ("model.visual.merger", V, "projector"),
    }),
    "InklingForConditionalGeneration": ("InklingForConditionalGeneration", {
        ("model.vision_tower", V, "tower"), ("model.audio_tower", A, "tower"),
    }),
    "BagelForUnifiedMultimodal": ("BagelForUnifiedMultimodal", {
        ("model.vit_model", V, "tower"), ("model.connector", V, "projector"), ("model.vit_pos_embed", V, "projector"),
    }),
}


@pytest.mark.parametrize("architecture", sorted(EXPECTED))
def test_framework_class_builds_on_meta_and_resolves_from_the_table(architecture: str) -> None:
    """Built the framework's way (its config class, its class choice, ``cls(config)`` on meta),
    every multimodal module has the expected path, modality and role, every parameter one owner,
    and the table (not the heuristic) answered."""
    class_name, modules = EXPECTED[architecture]
    result = verify_framework_architecture(architecture)
    assert result.built, result.problems
    assert result.class_name == class_name
    assert set(result.modules) == modules
    assert len(result.modules) == len(modules)
    assert result.problems == ()


def test_at_least_ten_framework_multimodal_classes_are_pinned() -> None:
    assert len({class_name for class_name, _ in EXPECTED.values()}) >= 10
