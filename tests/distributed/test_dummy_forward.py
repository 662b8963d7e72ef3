"""The dummy-forward protocol, single process: it traverses the tower and adds exactly zero."""

from __future__ import annotations

import pytest
import torch
from tests.distributed.scenarios import SCENARIOS, build_model
from tests.distributed.tiny_vlms import build_batch, resolved_modules
from transformers import Gemma3Config, Gemma3ForConditionalGeneration

from mmfreeze.distributed import (
    BatchContract,
    DummyForward,
    apply_dummy_forward,
    build_mesh_description,
    get_dummy_forward,
    get_executed_modalities,
    parse_multimodal_config,
    plan_multimodal_fsdp,
)


def tiny_gemma3() -> torch.nn.Module:
    torch.manual_seed(0)
    return Gemma3ForConditionalGeneration(Gemma3Config(
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=8, patch_size=4),
        text_config=dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=16, max_position_embeddings=256, sliding_window=16),
        mm_tokens_per_image=4, image_token_id=100, boi_token_index=101, eoi_token_index=102,
    ))


@pytest.mark.parametrize("scenario", ["dummy_qwen2_vl", "dummy_llava"])
def test_dummy_adds_exactly_zero_and_reaches_every_trainable_vision_parameter(scenario):
    """text-only batch, dummy enabled -> loss bit-identical to no dummy; every trainable parameter
    of the vision modules gets a gradient, and it is exactly zero."""
    arch = SCENARIOS[scenario].arch
    model = build_model(SCENARIOS[scenario])
    batch = build_batch(arch, "text", seed=1)
    plain = model(**batch).loss
    resolved = resolved_modules(model, arch)
    plan = plan_multimodal_fsdp(
        model, resolved, config=parse_multimodal_config({}, known_modalities={"vision"}),
        contract=BatchContract(), mesh=build_mesh_description(dp=2),
    )
    handles = apply_dummy_forward(model, plan)
    try:
        loss = model(**batch).loss
        loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    assert torch.equal(loss, plain)
    # The trainable vision parameters, named from the declared module paths (SPECS), not guessed
    # from substrings: every parameter under a vision module that requires grad.
    vision_paths = [module.spec.path for module in resolved if module.spec.modality == "vision"]
    vision = {
        name: p for name, p in model.named_parameters() if any(name.startswith(f"{path}.") for path in vision_paths)
    }
    trainable_vision = {name for name, p in vision.items() if p.requires_grad}
    vision_with_grad = {name for name, p in vision.items() if p.grad is not None}
    assert trainable_vision, "the scenario leaves no vision parameter trainable: the test would prove nothing"
    assert vision_with_grad == trainable_vision, (
        f"no gradient: {sorted(trainable_vision - vision_with_grad)}; "
        f"gradient on a frozen parameter: {sorted(vision_with_grad - trainable_vision)}"
    )
    nonzero = sorted(name for name in trainable_vision if torch.count_nonzero(vision[name].grad))
    assert not nonzero, f"the dummy forward changed these gradients: {nonzero}"


def test_dummy_does_not_run_when_the_batch_has_the_modality():
    model = build_model(SCENARIOS["dummy_llava"])
    calls = []
    implementation = get_dummy_forward(model)
    original = type(implementation).run
    plan = plan_multimodal_fsdp(
        model, resolved_modules(model, "llava"), config=parse_multimodal_config({}, known_modalities={"vision"}),
        contract=BatchContract(), mesh=build_mesh_description(dp=2),
    )
    apply_dummy_forward(model, plan)
    type(implementation).run = lambda self, *a, **k: calls.append(a) or original(self, *a, **k)
    try:
        model(**build_batch("llava", "image", seed=0))
        model(**build_batch("llava", "text", seed=0))
    finally:
        type(implementation).run = original
    assert len(calls) == 1


def test_gemma3_table_entry_runs_tower_and_projector():
    model = tiny_gemma3()
    result = get_dummy_forward(model).run(model, "vision", device=torch.device("cpu"))
    result.backward()
    assert result.ndim == 0 and model.model.multi_modal_projector.mm_input_projection_weight.grad is not None


def test_model_owned_declaration_wins_over_table():
    class Owned(DummyForward):
        modalities = frozenset({"audio"})

    model = build_model(SCENARIOS["dummy_llava"])
    model.mmfreeze_dummy_forward = Owned()
    assert get_dummy_forward(model).modalities == {"audio"}
    assert get_dummy_forward(torch.nn.Linear(1, 1)) is None


def test_executed_modalities_read_from_forward_inputs():
    model = build_model(SCENARIOS["dummy_qwen2_vl"])
    assert get_executed_modalities(model, build_batch("qwen2_vl", "image", 0)) == {"vision"}
    assert get_executed_modalities(model, build_batch("qwen2_vl", "text", 0)) == frozenset()
