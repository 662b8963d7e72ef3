"""Issue 25 (first part): the trainable parameters a loss never reaches, found without weights.

The three real cases of the issue, on the bundled recipes' registry configs at full size, and the
method validated: for seven architectures the static result (a text-only forward on the meta
device, the graph walked from the loss) equals a real forward and backward of the same module tree
at tiny widths on the CPU, name by name (the parameters whose ``.grad`` stays ``None``); and for
LLaVA's image path, the full-size ``FakeTensorMode`` result equals the shrunken real one.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch

from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.build import build_meta_model, build_transformers_config, resolve_model_class
from mmfreeze.models.loader import find_config
from mmfreeze.reachability.probe import (
    FAKE, LOSS_MODULE, META, SHRUNKEN, TEXT_TOKENS, image_on_shrunken_config, text_only_on_meta, with_an_image,
)
from mmfreeze.reachability.shrink import shrunken
from mmfreeze.recipes.recipe import load_recipe
from tests.conftest import EXAMPLE_CONFIGS

pytestmark = pytest.mark.slow  # builds seven 2B-30B models on meta, and their tiny copies for real

LLAVA_7B = "vlm_finetune/llava/llava_1_5_cauldron_sweep.yaml"
LLAVA_13B = "vlm_finetune/llava/llava_1_5_13b_scienceqa.yaml"
QWEN2_5_VL = "vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2.yaml"
OMNI = "audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_librispeech.yaml"
ARCHITECTURES = {
    "dense VLM": "vlm_finetune/qwen2_vl/qwen2_vl_7b_latex_ocr.yaml",
    "dense VLM, windowed ViT": QWEN2_5_VL,
    "MoE VLM": "vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_cauldron_router_rate.yaml",
    "audio": "audio_finetune/qwen2_audio/qwen2_audio_7b_librispeech.yaml",
    "omni": OMNI,
    "LLaVA-style feature layer": LLAVA_7B,
    "Gemma-style embedder": "vlm_finetune/gemma3/gemma3_4b_medpix.yaml",
}


@cache
def config_and_class(recipe: str) -> tuple[Any, type[torch.nn.Module]]:
    request = model_request(load_recipe(EXAMPLE_CONFIGS / recipe))
    config = build_transformers_config(find_config(request).config)
    return config, resolve_model_class(config, request.auto_class)


@cache
def text_only(recipe: str) -> frozenset[str]:
    config, model_class = config_and_class(recipe)
    result = text_only_on_meta(build_meta_model(config, model_class))
    assert result.method == META
    return result.unreachable


def prefixes(names: frozenset[str], depth: int) -> set[str]:
    return {".".join(name.split(".")[:depth]) for name in names}


@pytest.mark.parametrize("recipe", [LLAVA_7B, LLAVA_13B], ids=["7B", "13B"])
def test_llava_with_an_image_never_reaches_its_last_encoder_layer_or_post_layernorm(recipe: str) -> None:
    """LLaVA reads the image features from layer -2 (``vision_feature_layer``), so the last encoder
    layer and ``post_layernorm`` feed nothing (TRL #1936, #5778)."""
    config, model_class = config_and_class(recipe)
    result = with_an_image(config, model_class)
    last = config.vision_config.num_hidden_layers - 1
    assert config.vision_feature_layer == -2 and result.method == FAKE
    assert prefixes(result.unreachable, 5) == {f"model.vision_tower.encoder.layers.{last}",
                                               "model.vision_tower.post_layernorm.weight",
                                               "model.vision_tower.post_layernorm.bias"}
    assert len(result.unreachable) == 18


def test_qwen2_5_vl_text_only_never_reaches_its_tower_and_merger_and_with_an_image_reaches_all() -> None:
    config, model_class = config_and_class(QWEN2_5_VL)
    assert prefixes(text_only(QWEN2_5_VL), 2) == {"model.visual"}
    assert len(text_only(QWEN2_5_VL)) == 390  # the tower's 385 tensors and the merger's 5
    with_image = with_an_image(config, model_class)
    assert with_image.method == SHRUNKEN and with_image.unreachable == frozenset()


def test_qwen2_5_omni_thinker_loss_never_reaches_the_talker_or_token2wav() -> None:
    config, model_class = config_and_class(OMNI)
    model = build_meta_model(config, model_class)
    speech = {name for name, _ in model.named_parameters() if name.startswith(("talker.", "token2wav."))}
    unreachable = text_only_on_meta(model).unreachable
    assert speech and speech <= unreachable
    assert prefixes(unreachable - speech, 3) == {"thinker.model.audio_tower", "thinker.model.visual"}


@pytest.mark.parametrize("recipe", ARCHITECTURES.values(), ids=ARCHITECTURES.keys())
def test_the_static_text_only_result_equals_a_real_backward_name_by_name(recipe: str) -> None:
    config, model_class = config_and_class(recipe)
    torch.manual_seed(0)
    model = model_class._from_config(shrunken(config))
    loss_module = model.get_submodule(LOSS_MODULE.get(model_class.__name__, ""))
    loss_module(input_ids=torch.ones((1, TEXT_TOKENS), dtype=torch.long)).logits.float().sum().backward()
    without_gradient = frozenset(name for name, parameter in model.named_parameters() if parameter.grad is None)
    assert without_gradient  # every one of these architectures has a tower a text batch skips
    assert text_only(recipe) == without_gradient


def test_gemma3_with_an_image_reaches_its_whole_tower_and_embedder() -> None:
    """Gemma-style: the SigLIP tower's last hidden state, pooled and projected (no feature layer
    skipped), so an image batch reaches every parameter; a text-only one reaches none of them."""
    recipe = ARCHITECTURES["Gemma-style embedder"]
    config, model_class = config_and_class(recipe)
    with_image = with_an_image(config, model_class)
    assert with_image.method == SHRUNKEN and with_image.unreachable == frozenset()
    assert prefixes(text_only(recipe), 2) == {"model.vision_tower", "model.multi_modal_projector"}


def test_llavas_full_size_fake_result_equals_a_real_backward_of_its_shrunken_config() -> None:
    config, model_class = config_and_class(LLAVA_7B)
    assert with_an_image(config, model_class).unreachable == image_on_shrunken_config(config, model_class).unreachable
