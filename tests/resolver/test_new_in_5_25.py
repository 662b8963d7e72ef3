"""The multimodal architectures transformers 5.25.0 added, resolved by the table on their real module
trees (built on meta from their config classes' defaults): LLaVA-OneVision-1.5, whose merger is a
projector inside the tower, and Ovis2.5, whose visual vocabulary's embedding table is neither tower
nor projector. Under an earlier release the classes do not exist (the framework's environment)."""

from __future__ import annotations

import pytest

from benchmarks.resolver_checks import build_structure, candidate_classes
from mmfreeze.resolver.resolve import resolve_structure

EXPECTED = {
    "LlavaOnevision15ForConditionalGeneration": {
        ("model.visual", "vision", "tower"), ("model.visual.merger", "vision", "projector")},
    "Ovis2_5ForConditionalGeneration": {
        ("model.vision_tower", "vision", "tower"),
        ("model.multi_modal_projector.visual_tokenizer", "vision", "projector"),
        ("model.multi_modal_projector.visual_embeddings_table", "vision", "embedder")},
}
CANDIDATES = {candidate.class_name: candidate for candidate in candidate_classes()}


@pytest.mark.parametrize("class_name", sorted(EXPECTED))
def test_the_table_resolves_the_architectures_5_25_added(class_name: str) -> None:
    if class_name not in CANDIDATES:
        pytest.skip(f"this transformers release has no {class_name} (added in 5.25.0)")
    inventory = resolve_structure(build_structure(CANDIDATES[class_name]), warn_guess=False)
    assert {(m.spec.path, m.spec.modality, m.spec.role) for m in inventory.modules} == EXPECTED[class_name]
    assert inventory.source == "table"
