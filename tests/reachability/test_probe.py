"""Issue 25: the parameters a loss never reaches, found without weights, as each build probes them.

The probes are read from the structures the build workers make (the run's shared cache: each model
is built once), so what is tested is what snapshots use. The three real cases of the issue, on the
bundled recipes' registry configs at full size, and the method validated: for seven architectures
the static text-only results (a forward on the meta device, and one on the shrunken config with
constant weights that the build uses, each graph walked from the loss) equal a real forward and
backward of the same module tree at tiny widths and random weights on the CPU, name by name (the
parameters whose ``.grad`` stays ``None``); so do twenty-two image, video and
audio probes of seventeen models (a shrunken forward's graph walk), and LLaVA's full-size ``FakeTensorMode`` image result.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import torch

from mmfreeze.disk_cache import default_cache_dir
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.build import build_meta_model, build_transformers_config, resolve_model_class
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import find_config, load_structure
from mmfreeze.models.probe.batches import TEXT, TEXT_IMAGE, Batch, batch_for, llava_image_batch, text_batch
from mmfreeze.models.probe.run import FAKE, LOSS_MODULE, RAISES_ALIKE, SHRUNKEN, on_meta, with_fake_tensors
from mmfreeze.models.probe.shrink import shrunken
from mmfreeze.models.structure import MixesToProbe, ModelStructure, Probe
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.versions import installed_version
from tests.conftest import EXAMPLE_CONFIGS

pytestmark = pytest.mark.slow  # builds seven 2B-30B models on meta, and their tiny copies for real

LLAVA_7B = "vlm_finetune/llava/llava_1_5_cauldron_sweep.yaml"
LLAVA_13B = "vlm_finetune/llava/llava_1_5_13b_scienceqa.yaml"
QWEN2_5_VL = "vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2.yaml"
LLAMA_4 = "vlm_finetune/llama4/llama4_scout_chartqa_ep.yaml"
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


def probed_structure(recipe: str, mix: str) -> ModelStructure:
    """The recipe's model as a snapshot builds it, probed for ``mix`` (whatever mixes the recipe
    names), from the run's shared cache."""
    request = replace(model_request(load_recipe(EXAMPLE_CONFIGS / recipe)), probe=MixesToProbe(named=frozenset({mix})))
    return load_structure(request, StructureCache(default_cache_dir())).structure


def probe(recipe: str, mix: str) -> Probe:
    """The probe of ``mix`` that building the recipe's model recorded in its structure."""
    structure = probed_structure(recipe, mix)
    found = {probe.mix: probe for probe in structure.probes}[mix]
    assert found.method and not found.error, found
    return found


def unreached(recipe: str, mix: str) -> frozenset[str]:
    return frozenset(probe(recipe, mix).unreached)


def real_backward(recipe: str, batch: Batch) -> frozenset[str]:
    """The parameters a real forward and backward of ``batch`` through the recipe's model at
    shrunken widths leaves without a gradient, every parameter trainable (as a probe makes them)."""
    config, model_class = config_and_class(recipe)
    torch.manual_seed(0)
    small = shrunken(config)
    model = model_class._from_config(small)
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    loss_module = model.get_submodule(LOSS_MODULE.get(model_class.__name__, ""))
    loss_module(**batch(small, model_class)).logits.float().sum().backward()
    return frozenset(name for name, parameter in model.named_parameters() if parameter.grad is None)


def prefixes(names: frozenset[str], depth: int) -> set[str]:
    return {".".join(name.split(".")[:depth]) for name in names}


@pytest.mark.parametrize("recipe", [LLAVA_7B, LLAVA_13B], ids=["7B", "13B"])
def test_llava_with_an_image_never_reaches_its_last_encoder_layer_or_post_layernorm(recipe: str) -> None:
    """LLaVA reads the image features from layer -2 (``vision_feature_layer``), so the last encoder
    layer and ``post_layernorm`` feed nothing (TRL #1936, #5778)."""
    config, _ = config_and_class(recipe)
    last = config.vision_config.num_hidden_layers - 1
    assert config.vision_feature_layer == -2 and probe(recipe, TEXT_IMAGE).method == FAKE
    assert prefixes(unreached(recipe, TEXT_IMAGE), 5) == {f"model.vision_tower.encoder.layers.{last}",
                                                         "model.vision_tower.post_layernorm.weight",
                                                         "model.vision_tower.post_layernorm.bias"}
    assert len(unreached(recipe, TEXT_IMAGE)) == 18


def test_qwen2_5_vl_text_only_never_reaches_its_tower_and_merger_and_with_an_image_reaches_all() -> None:
    assert probe(QWEN2_5_VL, TEXT).method == SHRUNKEN
    assert prefixes(unreached(QWEN2_5_VL, TEXT), 2) == {"model.visual"}
    assert len(unreached(QWEN2_5_VL, TEXT)) == 390  # the tower's 385 tensors and the merger's 5
    assert probe(QWEN2_5_VL, TEXT_IMAGE).method == SHRUNKEN and unreached(QWEN2_5_VL, TEXT_IMAGE) == frozenset()


def test_qwen2_5_omni_thinker_loss_never_reaches_the_talker_or_token2wav() -> None:
    structure = probed_structure(OMNI, TEXT)
    speech = {info.name for info in structure.parameters if info.name.startswith(("talker.", "token2wav."))}
    text_only = unreached(OMNI, TEXT)
    assert speech and speech <= text_only
    assert prefixes(text_only - speech, 3) == {"thinker.model.audio_tower", "thinker.model.visual"}


def test_qwen2_5_omni_with_audio_reaches_its_audio_tower_but_its_bos_eos_embedding_and_never_the_talker() -> None:
    """The audio tower's ``audio_bos_eos_token`` embedding is created and never used by its forward."""
    structure = probed_structure(OMNI, TEXT)
    speech = {info.name for info in structure.parameters if info.name.startswith(("talker.", "token2wav."))}
    with_audio = unreached(OMNI, "text+audio")
    assert speech <= with_audio
    assert {name for name in with_audio - speech if not name.startswith("thinker.model.visual.")} == \
        {"thinker.model.audio_tower.audio_bos_eos_token.weight"}


@pytest.mark.parametrize("recipe", ARCHITECTURES.values(), ids=ARCHITECTURES.keys())
def test_the_static_text_only_results_on_meta_and_shrunken_equal_a_real_backward_name_by_name(recipe: str) -> None:
    """Each of these classes has a batch for another mix, so its build probes text on the shrunken
    model; the meta-device forward, which text-only classes get, is checked on the same model."""
    without_gradient = real_backward(recipe, text_batch)
    assert without_gradient  # every one of these architectures has a tower a text batch skips
    assert probe(recipe, TEXT).method == SHRUNKEN and unreached(recipe, TEXT) == without_gradient
    config, model_class = config_and_class(recipe)
    assert on_meta(build_meta_model(config, model_class), text_batch) == without_gradient


MIXED = {
    "Qwen2.5-VL image": (QWEN2_5_VL, TEXT_IMAGE),
    "Qwen3-VL-MoE video": (ARCHITECTURES["MoE VLM"], "text+video"),
    "GLM-4.1V video": ("vlm_peft/glm4v/glm4_1v_lora_chartqa.yaml", "text+video"),
    "PaliGemma-2 image": ("vlm_finetune/paligemma/paligemma2_3b_448_docvqa.yaml", TEXT_IMAGE),
    "Idefics3 image": ("vlm_finetune/idefics3/idefics3_8b_docmatix.yaml", TEXT_IMAGE),
    "Qwen2-Audio audio": (ARCHITECTURES["audio"], "text+audio"),
    "Granite Speech audio": ("audio_finetune/granite_speech/granite_speech_8b_librispeech.yaml", "text+audio"),
    "Qwen2.5-Omni audio": (OMNI, "text+audio"),
    "LLaVA-NeXT anyres image": ("vlm_finetune/llava_next/llava_next_mistral_7b_docvqa.yaml", TEXT_IMAGE),
    "LLaVA-OneVision anyres image": ("vlm_finetune/llava_onevision/llava_ov_7b_video.yaml", TEXT_IMAGE),
    "LLaVA-OneVision video": ("vlm_finetune/llava_onevision/llava_ov_7b_video.yaml", "text+video"),
    "Mllama cross-attention image": ("vlm_finetune/mllama/mllama_11b_vqav2.yaml", TEXT_IMAGE),
    "Ernie-4.5-VL image": ("vlm_finetune/ernie4_5_vl/ernie4_5_vl_28b_a3b_cord_v2.yaml", TEXT_IMAGE),
    "Kimi-K2.5 image": ("vlm_finetune/kimi_k25/kimi_k25_cord_v2_ep.yaml", TEXT_IMAGE),
    "Qwen2.5-Omni image": ("audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_av_mix.yaml", TEXT_IMAGE),
    "Qwen3-Omni audio": ("audio_finetune/qwen3_omni_moe/qwen3_omni_30b_a3b_common_voice_ep.yaml", "text+audio"),
    "Phi-4-multimodal image": ("vlm_peft/phi4_multimodal/phi4_mm_lora_vision_cord.yaml", TEXT_IMAGE),
    "Phi-4-multimodal audio": ("audio_finetune/phi4_multimodal/phi4_mm_librispeech.yaml", "text+audio"),
    "Gemma-3n timm image": ("vlm_peft/gemma3n/gemma3n_lora_cauldron.yaml", TEXT_IMAGE),
    "Gemma-3n audio": ("audio_finetune/gemma3n/gemma3n_e4b_common_voice.yaml", "text+audio"),
    "Gemma-4 video": ("vlm_finetune/gemma4/gemma4_e2b_cauldron_ai2d.yaml", "text+video"),
    "Gemma-4 audio": ("audio_finetune/gemma4/gemma4_e2b_librispeech.yaml", "text+audio"),
}
"""Image, video and audio mixes probed on a shrunken config, whose graph walk is checked against a backward."""


@pytest.mark.parametrize(("recipe", "mix"), MIXED.values(), ids=MIXED.keys())
def test_a_shrunken_probes_graph_walk_equals_a_real_backward_name_by_name(recipe: str, mix: str) -> None:
    _, model_class = config_and_class(recipe)
    found = probe(recipe, mix)
    assert found.method == SHRUNKEN
    assert frozenset(found.unreached) == real_backward(recipe, batch_for(mix, model_class))


@pytest.mark.parametrize("recipe", ["vlm_finetune/paligemma/paligemma2_3b_448_docvqa.yaml",
                                    "vlm_finetune/aya_vision/aya_vision_8b_multilingual.yaml"], ids=["PaliGemma-2", "Aya Vision"])
def test_a_siglip_towers_pooling_head_never_reaches_the_loss_even_with_an_image(recipe: str) -> None:
    """These models read the tower's patch states, never its pooled output, so the attention-pooling
    head (11 tensors) feeds nothing; Aya reads the last hidden state before ``post_layernorm`` too."""
    image = unreached(recipe, TEXT_IMAGE)
    head = {name for name in image if name.startswith("model.vision_tower.head.")}
    assert len(head) == 11
    rest = image - head
    assert rest == (set() if "paligemma" in recipe else {"model.vision_tower.post_layernorm.weight",
                                                         "model.vision_tower.post_layernorm.bias"})


def test_gemma3_with_an_image_reaches_its_whole_tower_and_embedder() -> None:
    """Gemma-style: the SigLIP tower's last hidden state, pooled and projected (no feature layer
    skipped), so an image batch reaches every parameter; a text-only one reaches none of them."""
    recipe = ARCHITECTURES["Gemma-style embedder"]
    assert probe(recipe, TEXT_IMAGE).method == SHRUNKEN and unreached(recipe, TEXT_IMAGE) == frozenset()
    assert prefixes(unreached(recipe, TEXT), 2) == {"model.vision_tower", "model.multi_modal_projector"}


def test_llavas_full_size_fake_result_equals_a_real_backward_of_its_shrunken_config() -> None:
    config, model_class = config_and_class(LLAVA_7B)
    fake = with_fake_tensors(config, model_class, llava_image_batch)
    assert len(fake) == 18 and fake == real_backward(LLAVA_7B, llava_image_batch)


def test_a_mix_asked_for_alone_gets_the_probe_it_gets_beside_every_other_even_where_the_model_raises() -> None:
    """Llama-4's image mix has one method. Under transformers 5.24 its forward raises on every call,
    and the image mix says so (the text mix, taken for it, failed alike under two methods) whether
    or not a recipe asks for the text mix too; 5.18's runs."""
    request = model_request(load_recipe(EXAMPLE_CONFIGS / LLAMA_4))
    alone = load_structure(replace(request, probe=MixesToProbe(named=frozenset({TEXT_IMAGE}))), StructureCache(None))
    every = load_structure(replace(request, probe=MixesToProbe(every=True)), StructureCache(None))
    assert alone.structure.probes == tuple(probe for probe in every.structure.probes if probe.mix == TEXT_IMAGE)
    [image] = alone.structure.probes
    assert image.error.startswith(RAISES_ALIKE) == (installed_version("transformers") == "5.24.0"), image
