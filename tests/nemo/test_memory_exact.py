"""Issue 49: mmfreeze's per-rank memory equals, to the byte and rank by rank, what stock FSDP2 runs allocate.

Each case (:data:`CASES`) is a tiny recipe of one family (LLaVA, Qwen2.5-VL, Qwen2-Audio, Voxtral, Gemma3; Qwen3-VL,
Gemma4 and MuseGlimmer, which the framework builds with its own classes and shards with each class's own parallelizer;
and a Llama language model alone), trained by nemo-automodel 0.7.0's own entry point and recipe class
(``FinetuneRecipeForVLM``; ``TrainFinetuneRecipeForNextTokenPrediction`` for the Llama), FSDP2 on gloo ranks
on CPU. The cases of one world size share one launch,

    torchrun --nproc-per-node N -m run_recipes plan.json

whose workers call the stock entry point ``nemo_automodel.cli.app.main`` on each recipe in turn,
as ``torchrun -m nemo_automodel.cli.app recipe.yaml`` would (``memory_runs/run_recipes.py``), so
the ranks' startup is paid once per world size. Nothing of mmfreeze is in the training processes:
``memory_runs/`` (and ``stock_launch/``, for its two ``torch.cuda`` stubs) is their only ``PYTHONPATH``. ``memory_runs/memory_probe.py`` measures,
through torch's public optimizer step hooks, each rank's unique storages of parameters, gradients and
optimizer states just before the second optimizer step. mmfreeze's prediction is what a user sees:
``mmfreeze explain --format json --world-size N`` on the same recipe file.

The models are built ``from_config`` from tiny configs written here (no weights, no download); the
language vocabulary is odd (:data:`VOCAB`), so the embedding and output rows do not divide by the
world size and ranks hold different optimizer shards. The cases cover full fine-tuning with a frozen
tower, LoRA (fp32 adapters on a bf16 base), ``frozen_sharding: replicate`` and ``per_layer``, tied embeddings, fp32 and bf16, on 2 ranks
and one on 4; and, loaded ``from_pretrained`` from tiny random weights, a tensor the model keeps in fp32 in a
bf16 and in an fp16 run (Voxtral's ``embed_positions``), sharded and replicated, and knowledge distillation
(``KnowledgeDistillationRecipeForVLM``): a frozen teacher on the same ranks, which keeps the units it
wraps without resharding after forward all-gathered, beside their shards; and tensor parallelism
(``tp_size: 2``, the framework's own plans), on 2 ranks and on 4 (2 data-parallel x 2 tensor-parallel); and
expert parallelism (``ep_size: 2``, the framework's own Qwen3-VL-MoE class through its MoE parallelizer), on 2
ranks, with LoRA, and on 4 (each rank's experts FSDP2-sharded over 2); and context parallelism (``cp_size: 2``),
on 2 ranks and on 4 (2 context-parallel x 2 tensor-parallel). On this CPU its attention needs one rule torch
registers for the CUDA kernels alone (``memory_runs/cpu_attention_rule.py``).
The two launches start together, beside the predictions.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, pytest.mark.slow, requires_framework]

HERE = Path(__file__).resolve().parent
PROBE_PATH = [HERE / "memory_runs", HERE / "stock_launch"]
STEPS = 2
DEADLINE_S = 300.0
VOCAB = 131
"""Odd: 131 rows split 66/65 over 2 ranks and 33/33/33/32 over 4."""
TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": VOCAB, "max_position_embeddings": 256,
        "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}
MEDIA_TOKEN = 120  # below VOCAB; ids >= TEXT_VOCAB carry no loss
TEXT_VOCAB = 110


OWN_PARALLELIZER_CASES = {
    "qwen3_vl_own_parallelizer": ("nemo_automodel.components.models.qwen3_vl.model.Qwen3VLForConditionalGeneration",
                                  "Qwen3VLModelParallelizer"),
    "gemma4_own_parallelizer": ("nemo_automodel.components.models.gemma4_moe.model.Gemma4ForConditionalGeneration",
                                "Gemma4ModelParallelizer"),
    "muse_glimmer_own_parallelizer": (
        "nemo_automodel.components.models.muse_glimmer.model.MuseGlimmerForConditionalGeneration",
        "MuseGlimmerModelParallelizer"),
}
"""Case -> the class the run must build and its own parallelizer (the class's ``parallelizer`` sidecar)."""
MUSE_GLIMMER_VISION = ("vision_encoder", "vision_adapter", "vision_projection")
"""MuseGlimmer's vision encoder, adapter and projection, frozen: its batches are text alone."""
VOXTRAL_AUDIO = ("audio_tower", "multi_modal_projector")
"""Voxtral's audio encoder and projector, frozen: its batches are text alone, which reaches the rest."""
GEMMA4_MEDIA = ("vision_tower", "embed_vision", "audio_tower", "embed_audio")
"""Gemma4's towers and their embedders, frozen: its batches are text alone, which reaches the rest."""


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    world: int
    dtype: str
    freeze_config: dict[str, Any] | None = None
    peft: dict[str, Any] | None = None
    frozen_sharding: str = "root"
    tied: bool = False
    """The language model's input and output embeddings are one parameter (``tie_word_embeddings``)."""
    pretrained: bool = False
    """Loaded ``from_pretrained`` from tiny weights written here (random, fp32), not built ``from_config``."""
    teacher: bool = False
    """Knowledge distillation (``KnowledgeDistillationRecipeForVLM``): the family's tied-embedding config is
    the teacher, frozen whole, on the same ranks; both are loaded ``from_pretrained`` (the case says so) beside a
    tokenizer."""
    optimizer: dict[str, Any] = field(default_factory=lambda: {"_target_": "torch.optim.AdamW", "lr": 1.0e-3,
                                                                "weight_decay": 0.0})
    """The recipe's `optimizer:` section: AdamW unless the case sizes another torch optimizer's state."""
    teacher_tied: bool = True
    """The teacher's input and output embeddings are one parameter."""
    tp: int = 1
    """``distributed.tp_size``: the framework's tensor-parallel plan splits the language model over this many of
    the ranks, and FSDP2 shards each slice over the rest."""
    sequence_parallel: bool = False
    """``distributed.sequence_parallel``: the framework's plan adds its sequence-parallel styles."""
    ep: int = 1
    """``distributed.ep_size``: the framework's MoE parallelizer splits each MoE layer's experts over this many
    ranks, and FSDP2 shards each slice over the rest (``ep_shard``) where there are more than one."""
    cp: int = 1
    """``distributed.cp_size``: context parallelism splits each sequence over this many of the ranks, and FSDP2
    shards over them and the data-parallel ranks together (``dp_shard_cp``)."""
    text_batches: bool = False
    """Batches of text alone, for a family whose batches otherwise carry an image."""
    extra: dict[str, Any] = field(default_factory=dict)


CASES = (
    Case("llava_full_frozen_tower", "llava", 2, "float32",
         freeze_config={"freeze_modules": [{"path": "model.vision_tower"}]}),
    Case("qwen2_5_vl_lora", "qwen2_5_vl", 2, "bfloat16",  # fp32 adapters (peft.lora_dtype) on a bf16 base
         peft={"_target_": "nemo_automodel.components._peft.lora.PeftConfig", "target_modules": ["*_proj"], "dim": 4,
               "alpha": 8, "lora_dtype": "torch.float32"}),
    Case("qwen2_audio_replicate", "qwen2_audio", 2, "float32",
         freeze_config={"freeze_modules": [{"path": "model.audio_tower"}]}, frozen_sharding="replicate"),
    Case("qwen3_vl_own_parallelizer", "qwen3_vl", 2, "bfloat16",  # the framework's own class
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}),
    Case("gemma4_own_parallelizer", "gemma4", 2, "bfloat16",  # the framework's own class; text batches
         freeze_config={"freeze_modules": [{"path": f"model.{part}"} for part in GEMMA4_MEDIA]}, tied=True),
    Case("muse_glimmer_own_parallelizer", "muse_glimmer", 2, "bfloat16",  # the framework's own class; text batches
         freeze_config={"freeze_modules": [{"path": f"model.{part}"} for part in MUSE_GLIMMER_VISION]}),
    Case("voxtral_kept_fp32_pretrained", "voxtral", 2, "bfloat16",  # embed_positions loads in fp32; text batches
         freeze_config={"freeze_modules": [{"path": f"model.{part}"} for part in VOXTRAL_AUDIO]}, pretrained=True),
    Case("voxtral_kept_fp32_replicate", "voxtral", 2, "bfloat16",  # ... and stays so, replicated
         freeze_config={"freeze_modules": [{"path": f"model.{part}"} for part in VOXTRAL_AUDIO]}, pretrained=True,
         frozen_sharding="replicate"),
    Case("voxtral_kept_fp32_float16", "voxtral", 2, "float16",  # float16: the strict pattern is kept in fp32 too
         freeze_config={"freeze_modules": [{"path": f"model.{part}"} for part in VOXTRAL_AUDIO]}, pretrained=True),
    Case("voxtral_float16_replicate", "voxtral", 2, "float16",  # the replicated tower: compute dtype but the pattern
         freeze_config={"freeze_modules": [{"path": f"model.{part}"} for part in VOXTRAL_AUDIO]}, pretrained=True,
         frozen_sharding="replicate"),
    Case("llava_distillation", "llava", 2, "bfloat16",  # KnowledgeDistillationRecipeForVLM, a tied teacher
         freeze_config={"freeze_modules": [{"path": "model.vision_tower"}]}, pretrained=True, teacher=True),
    Case("llama_llm_finetune", "llama", 2, "bfloat16",  # TrainFinetuneRecipeForNextTokenPrediction, the LLM recipe
         freeze_config={"freeze_modules": [{"path": "model.embed_tokens"}]}),
    *(Case(f"llava_{name}", "llava", 2, "float32", freeze_config={"freeze_modules": [{"path": "model.vision_tower"}]},
           optimizer={"_target_": f"torch.optim.{optimizer}", "lr": 1.0e-3, **options})
      for name, optimizer, options in (  # each torch optimizer's own state (mmfreeze.memory.optimizer)
          ("sgd_momentum", "SGD", {"momentum": 0.9}), ("rmsprop_centered", "RMSprop", {"momentum": 0.9, "centered": True}),
          ("nadam", "NAdam", {}), ("adagrad", "Adagrad", {}))),
    Case("llava_per_layer_tied_4_ranks", "llava", 4, "bfloat16",
         freeze_config={"freeze_modules": [{"path": "model.vision_tower"}]}, frozen_sharding="per_layer", tied=True),
    # tensor parallelism: the framework's own plan for each class (Llama's optimised one, the others' own
    # Hugging Face plans), the vocabulary split 66/65 between the two tensor-parallel ranks
    Case("llama_tensor_parallel", "llama", 2, "bfloat16", freeze_config={"freeze_modules": [{"path": "model.embed_tokens"}]},
         tp=2),
    Case("llama_sequence_parallel", "llama", 2, "float32",  # the plan's sequence-parallel styles keep norms whole
         freeze_config={"freeze_modules": [{"path": "model.embed_tokens"}]}, tp=2, sequence_parallel=True),
    Case("llava_tensor_parallel", "llava", 2, "float32",
         freeze_config={"freeze_modules": [{"path": "model.vision_tower"}]}, tp=2),
    Case("qwen2_5_vl_tensor_parallel_4_ranks", "qwen2_5_vl", 4, "bfloat16",  # 2 data-parallel x 2 tensor-parallel
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}, tp=2),
    Case("qwen2_5_vl_lora_tensor_parallel", "qwen2_5_vl", 2, "bfloat16",  # adapters split as the LoRA styles do
         peft={"_target_": "nemo_automodel.components._peft.lora.PeftConfig", "target_modules": ["*_proj"], "dim": 4,
               "alpha": 8, "lora_dtype": "torch.float32"}, tp=2),
    Case("llava_distillation_tensor_parallel", "llava", 2, "bfloat16",  # the teacher split by the same plan;
         freeze_config={"freeze_modules": [{"path": "model.vision_tower"}]}, pretrained=True, teacher=True,
         teacher_tied=False, tp=2),  # a tied LLaVA's plan splits lm_head alone, and a stock run of it fails
    Case("qwen2_audio_replicate_tensor_parallel", "qwen2_audio", 2, "float32",  # the tower whole, the rest split
         freeze_config={"freeze_modules": [{"path": "model.audio_tower"}]}, frozen_sharding="replicate", tp=2),
    Case("gemma3_tensor_parallel", "gemma3", 2, "bfloat16",  # q/k norms kept whole (ReplicatedWithGradAllReduce)
         freeze_config={"freeze_modules": [{"path": "model.vision_tower"}, {"path": "model.multi_modal_projector"}]},
         tp=2),
    # expert parallelism: the framework's own Qwen3-VL-MoE class through its MoE parallelizer, 6 experts per layer
    Case("qwen3_vl_moe_expert_parallel", "qwen3_vl_moe", 2, "bfloat16",  # 3 experts a rank, whole, own gradients
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}, ep=2),
    Case("qwen3_vl_moe_expert_parallel_4_ranks", "qwen3_vl_moe", 4, "bfloat16",  # ... FSDP2-sharded on dim 1 over 2
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}, ep=2),
    Case("qwen3_vl_moe_lora_expert_parallel", "qwen3_vl_moe", 2, "bfloat16",  # adapters on attention, experts frozen
         peft={"_target_": "nemo_automodel.components._peft.lora.PeftConfig",
               "target_modules": ["*.self_attn.q_proj", "*.self_attn.o_proj"], "dim": 4, "alpha": 8}, ep=2),
    # context parallelism: the framework's generic SDPA path for a transformers class (text batches: 0.7.0 splits
    # input_ids before the model merges an image's features, and a stock run with an image stops there, "Image
    # features and image tokens do not match", on any device), and Qwen3-VL's own, with an image
    Case("qwen2_5_vl_context_parallel", "qwen2_5_vl", 2, "bfloat16",
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}, cp=2, text_batches=True),
    Case("qwen3_vl_context_parallel", "qwen3_vl", 2, "bfloat16",
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}, cp=2),
    Case("qwen2_5_vl_context_and_tensor_parallel_4_ranks", "qwen2_5_vl", 4, "bfloat16",  # 2 context x 2 tensor
         freeze_config={"freeze_modules": [{"path": "model.visual"}]}, tp=2, cp=2, text_batches=True),
)


@dataclass(frozen=True)
class Refused:
    """A layout the stock run refuses, in the framework's words, and mmfreeze with it, naming the key."""

    case: Case
    framework_says: str
    mmfreeze_says: str


REFUSED = (
    # expert parallelism on a transformers class: 0.7.0's validate_for_mesh refuses it when it builds the model
    Refused(Case("qwen2_5_vl_expert_parallel_refused", "qwen2_5_vl", 2, "bfloat16",
                 freeze_config={"freeze_modules": [{"path": "model.visual"}]}, ep=2),
            "requires a MoE model, but Qwen2_5_VLForConditionalGeneration does not inherit from MoEFSDPSyncMixin",
            "distributed.ep_size: is 2, but the framework trains transformers' Qwen2_5_VLForConditionalGeneration"),
)


# --------------------------------------------------------------------------------------------
# Tiny models and their synthetic batches.
# --------------------------------------------------------------------------------------------

def tiny_config(family: str, *, tied: bool = False) -> Any:
    from transformers import LlamaConfig, LlavaConfig, Qwen2_5_VLConfig, Qwen2AudioConfig, Qwen3VLConfig

    if family == "llama":  # a language model alone, for the LLM recipe
        return LlamaConfig(**TEXT)
    if family == "llava":
        return LlavaConfig(
            text_config={"model_type": "llama", **TEXT, "tie_word_embeddings": tied}, tie_word_embeddings=tied,
            vision_config={"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                           "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 8, "patch_size": 4,
                           "projection_dim": 32},
            image_token_index=MEDIA_TOKEN, vision_feature_layer=-1, vision_feature_select_strategy="default")
    if family == "qwen2_5_vl":
        return Qwen2_5_VLConfig(
            text_config={**TEXT, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                     "mrope_section": [2, 3, 3]}},
            vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 2,
                           "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 8, "out_hidden_size": 32,
                           "fullatt_block_indexes": [1]},
            image_token_id=MEDIA_TOKEN, video_token_id=121, vision_start_token_id=122, vision_end_token_id=123,
            tie_word_embeddings=False)
    if family == "qwen3_vl":  # the framework builds its own class, whose parallelizer shards it
        return Qwen3VLConfig(
            text_config={**TEXT, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                     "mrope_section": [2, 3, 3], "mrope_interleaved": True}},
            vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 2,
                           "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32,
                           "num_position_embeddings": 16, "deepstack_visual_indexes": [0]},
            image_token_id=MEDIA_TOKEN, video_token_id=121, vision_start_token_id=122, vision_end_token_id=123,
            tie_word_embeddings=False, architectures=["Qwen3VLForConditionalGeneration"])  # what picks the class
    if family == "qwen3_vl_moe":  # the framework's own MoE class; dims that divide as FSDP2 needs on dim 1
        from transformers import Qwen3VLMoeConfig

        return Qwen3VLMoeConfig(
            text_config={**TEXT, "num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 24,
                         "decoder_sparse_step": 1, "mlp_only_layers": [],
                         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                             "mrope_section": [2, 3, 3], "mrope_interleaved": True}},
            vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 2,
                           "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32,
                           "num_position_embeddings": 16, "deepstack_visual_indexes": [0]},
            image_token_id=MEDIA_TOKEN, video_token_id=121, vision_start_token_id=122, vision_end_token_id=123,
            tie_word_embeddings=False, architectures=["Qwen3VLMoeForConditionalGeneration"])
    if family == "gemma3":  # a transformers class whose tensor-parallel plan is the framework's optimised one
        from transformers import Gemma3Config

        return Gemma3Config(
            text_config={"model_type": "gemma3_text", **TEXT, "tie_word_embeddings": True},
            vision_config={"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                           "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 8, "patch_size": 4},
            mm_tokens_per_image=4, image_token_index=MEDIA_TOKEN, boi_token_index=121, eoi_token_index=122)
    if family == "gemma4":
        return tiny_gemma4(tied=tied)
    if family == "muse_glimmer":
        return tiny_muse_glimmer()
    if family == "voxtral":
        return tiny_voxtral()
    return Qwen2AudioConfig(
        text_config={"model_type": "qwen2", **TEXT},
        audio_config={"num_mel_bins": 16, "encoder_layers": 2, "encoder_attention_heads": 2, "encoder_ffn_dim": 64,
                      "d_model": 32, "max_source_positions": 8},
        audio_token_index=MEDIA_TOKEN)


def tiny_gemma4(*, tied: bool) -> Any:
    """Gemma-4-E2B's bundled config at tiny widths, its layout kept: per-layer input embeddings, layers
    sharing key-value caches, a vision and an audio tower; its embeddings tied as the case says (E2B ties them)."""
    from transformers import Gemma4Config

    from mmfreeze.models.config_sources import find_model_config

    config = dict(find_model_config("google/gemma-4-E2B-it").config)
    text = {**config["text_config"], **TEXT, "global_head_dim": 16, "vocab_size_per_layer_input": VOCAB,
            "hidden_size_per_layer_input": 8, "num_hidden_layers": 4, "num_kv_shared_layers": 2, "sliding_window": 8,
            "layer_types": ["sliding_attention", "full_attention"] * 2, "tie_word_embeddings": tied}
    vision = {**config["vision_config"], "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 16, "position_embedding_size": 64}
    audio = {**config["audio_config"], "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
             "output_proj_dims": 32}
    media = {"image_token_id": MEDIA_TOKEN, "audio_token_id": 121, "boi_token_id": 122, "eoi_token_id": 123,
             "video_token_id": 124, "boa_token_id": 125, "eoa_token_index": 126}
    return Gemma4Config(**{**config, "text_config": text, "vision_config": vision, "audio_config": audio, **media,
                            "tie_word_embeddings": tied})


def tiny_muse_glimmer() -> Any:
    """MuseGlimmer-30B's bundled config (the framework's own config class) at tiny widths."""
    from nemo_automodel.components.models.muse_glimmer.config import MuseGlimmerConfig

    from mmfreeze.models.config_sources import find_model_config

    config = {**find_model_config("meta-models/Muse-Glimmer-30B").config, **TEXT}
    vision = {"vision_latent_dim": 32, "vision_output_dim": 64, "vision_layers": 2, "vision_heads": 2,
              "vision_pos_emb_grid_h": 4, "vision_pos_emb_grid_w": 4, "vision_adapter_dim": 32}
    return MuseGlimmerConfig(**{**config, **vision})


def tiny_voxtral() -> Any:
    """Voxtral at tiny widths: its audio encoder's ``embed_positions`` is kept in fp32
    (``_keep_in_fp32_modules_strict``) where the rest loads in the recipe's dtype."""
    from transformers import VoxtralConfig

    audio = {"num_mel_bins": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
             "hidden_size": 32, "max_source_positions": 8}
    return VoxtralConfig(audio_config=audio, text_config={"model_type": "llama", **TEXT}, audio_token_id=MEDIA_TOKEN,
                         projector_hidden_act="gelu")


def tiny_model(family: str, config: Any) -> Any:
    """The family's transformers class with random fp32 weights, for a case loaded ``from_pretrained``."""
    from transformers import LlavaForConditionalGeneration, VoxtralForConditionalGeneration

    classes = {"voxtral": VoxtralForConditionalGeneration, "llava": LlavaForConditionalGeneration}
    return classes[family](config)


def batch_spec(family: str, config: Any, *, text: bool = False) -> dict[str, Any]:
    """What ``memory_runs/memory_data.py`` needs to make a batch the model accepts (``text``: text alone)."""
    base = {"kind": family, "text_vocab": TEXT_VOCAB, "seq_len": 12}
    if text or family in ("gemma3", "gemma4", "muse_glimmer", "voxtral", "llama"):
        return {**base, "kind": "text", "placeholders": [], "media_shape": [0]}
    if family == "llava":
        vision = config.vision_config
        tokens = (vision.image_size // vision.patch_size) ** 2
        return {**base, "placeholders": [MEDIA_TOKEN] * tokens,
                "media_shape": [vision.num_channels, vision.image_size, vision.image_size]}
    if family in ("qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"):  # one image input: flattened patches and their grid
        vision = config.vision_config
        merge = vision.spatial_merge_size
        patch_dim = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
        return {**base, "kind": "qwen2_5_vl", "placeholders": [122, MEDIA_TOKEN, 123], "grid": [1, merge, merge],
                "image_token_id": MEDIA_TOKEN, "media_shape": [merge * merge, patch_dim]}
    audio = config.audio_config
    frames = 2 * audio.max_source_positions  # the encoder's fixed input length (conv2 has stride 2)
    tokens = (audio.max_source_positions - 2) // 2 + 1  # _get_feat_extract_output_lengths
    return {**base, "placeholders": [MEDIA_TOKEN] * tokens, "media_shape": [audio.num_mel_bins, frames]}


def tiny_model_dir(family: str, repository: Path, *, tied: bool, pretrained: bool) -> Path:
    """The family's tiny config (and, ``pretrained``, random weights and a tokenizer) in ``repository/models``."""
    model_dir = repository / "models" / (family + ("-tied" if tied else "") + ("-weights" if pretrained else ""))
    if not (model_dir / "config.json").exists():
        config = tiny_config(family, tied=tied)
        config.save_pretrained(model_dir)
        if pretrained:
            tiny_model(family, config).save_pretrained(model_dir)
        if pretrained or family == "llama":  # the LLM recipe loads the tokenizer beside the model's config
            tiny_tokenizer().save_pretrained(model_dir)
    return model_dir


def tiny_tokenizer() -> Any:
    """A word-level tokenizer over :data:`VOCAB` ids: distillation checks both models' vocabulary and pad token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({f"t{index}": index for index in range(VOCAB)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="t0", pad_token="t3", bos_token="t1",
                                   eos_token="t2")


def write_recipe(case: Case, repository: Path) -> Path:
    """The case's recipe file in ``repository``, beside its tiny config (``models/<family>``)."""
    config = tiny_config(case.family, tied=case.tied)
    model_dir = tiny_model_dir(case.family, repository, tied=case.tied, pretrained=case.pretrained)
    target = {"qwen2_audio": "NeMoAutoModelForMultimodalLM", "voxtral": "NeMoAutoModelForMultimodalLM",
              "llama": "NeMoAutoModelForCausalLM"}.get(case.family, "NeMoAutoModelForImageTextToText")
    spec = batch_spec(case.family, config, text=case.text_batches)
    recipe: dict[str, Any] = {
        "recipe": "KnowledgeDistillationRecipeForVLM" if case.teacher else
                  "TrainFinetuneRecipeForNextTokenPrediction" if case.family == "llama" else "FinetuneRecipeForVLM",
        "seed": 42,
        "dist_env": {"backend": "gloo", "timeout_minutes": 2},
        "step_scheduler": {"global_batch_size": 2 * case.world, "local_batch_size": 2, "max_steps": STEPS,
                           "num_epochs": 1, "ckpt_every_steps": 1000, "val_every_steps": None},
        "model": {"_target_": f"nemo_automodel.{target}.from_pretrained", "torch_dtype": case.dtype,
                  "pretrained_model_name_or_path": str(model_dir)} if case.pretrained else
                 {"_target_": f"nemo_automodel.{target}.from_config", "torch_dtype": case.dtype,
                  "config": {"_target_": "transformers.AutoConfig.from_pretrained",
                             "pretrained_model_name_or_path": str(model_dir)}},
        **({"teacher_model": {"_target_": f"nemo_automodel.{target}.from_pretrained", "torch_dtype": case.dtype,
                              "pretrained_model_name_or_path": str(tiny_model_dir(
                                  case.family, repository, tied=case.teacher_tied, pretrained=True))},
            "kd_loss_fn": {"_target_": "nemo_automodel.components.loss.kd_loss.KDLoss"}, "kd_ratio": 0.5}
           if case.teacher else {}),
        **({"freeze_config": case.freeze_config} if case.freeze_config is not None else {}),
        **({"peft": case.peft} if case.peft is not None else {}),
        "distributed": {"strategy": "fsdp2", "dp_size": None, "tp_size": case.tp, "cp_size": case.cp, "pp_size": 1,
                        **({"ep_size": case.ep} if case.ep > 1 else {}), "sequence_parallel": case.sequence_parallel,
                        "multimodal": {"frozen_sharding": case.frozen_sharding}},
        "loss_fn": {"_target_": "nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy"},
        "optimizer": case.optimizer,
        "checkpoint": {"enabled": False, "checkpoint_dir": str(repository / "checkpoints" / case.name)},
        "dataset": {"_target_": "memory_data.synthetic_dataset", "spec": spec, "size": STEPS * 2 * case.world},
        "processor": {"_target_": "memory_data.no_processor"},
        "dataloader": {"_target_": "torchdata.stateful_dataloader.StatefulDataLoader", "shuffle": False,
                       "collate_fn": {"_target_": "memory_data.synthetic_collate", "spec": spec}},
        **case.extra,
    }
    path = repository / "recipes" / f"{case.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# The launches (all at once) and mmfreeze's predictions.
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    case: Case
    code: int | None
    output: str
    ranks: dict[int, dict[str, Any]]
    predicted: dict[str, Any] | None
    explain_output: str


def torchrun() -> list[str]:
    script = Path(sys.executable).parent / "torchrun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


def launch(world: int, plan: list[tuple[Path, Path]], folder: Path, port: int) -> subprocess.Popen:
    """One torchrun of ``world`` ranks that trains every ``(recipe, probe folder)`` of ``plan`` in turn."""
    (folder / "plan.json").write_text(json.dumps([[str(recipe), str(out)] for recipe, out in plan]))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PYTEST", "MMFREEZE"))}
    env.update({"PYTHONPATH": os.pathsep.join(map(str, PROBE_PATH)), "MEMORY_RUN_OUT": str(folder),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "WANDB_MODE": "disabled",
                "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""})
    command = [*torchrun(), "--nproc-per-node", str(world), "--master-port", str(port), "--master-addr",
               "127.0.0.1", "-m", "run_recipes", str(folder / "plan.json")]
    log = (folder / "launch.log").open("w")
    return subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def predict(recipe: Path, world: int) -> tuple[dict[str, Any] | None, str]:
    """``mmfreeze explain --format json --world-size N`` on the recipe (the user's command), run in this
    process while the launches train (one interpreter for every prediction: the launches need the cores)."""
    from click.testing import CliRunner

    from mmfreeze.cli.main import cli

    result = CliRunner().invoke(cli, ["explain", "--format", "json", "--world-size", str(world), "--no-cache",
                                      str(recipe)], env={"HF_HUB_OFFLINE": "1"})
    output = result.stdout[-3000:] + result.stderr[-3000:] + (repr(result.exception) if result.exception else "")
    return (json.loads(result.stdout)["memory"] if result.exit_code == 0 else None), output


def wait(procs: list[subprocess.Popen], deadline: float) -> None:
    for proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # each started its own session: torchrun takes its workers along
            proc.wait()


def run_all(repository: Path, cases: tuple[Case, ...] = CASES) -> list[Run]:
    """Every case's run (one launch per world size, the teacher's case last: the probe finds a teacher
    among live objects) and its prediction, the launches started together."""
    from tests.distributed.launch import free_port

    (repository / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    recipes = {case.name: write_recipe(case, repository) for case in cases}
    outs = {case.name: repository / "runs" / case.name / "probe" for case in cases}
    worlds = sorted({case.world for case in cases})
    folders = {world: repository / "runs" / f"world{world}" for world in worlds}
    for folder in [*outs.values(), *folders.values()]:
        folder.mkdir(parents=True)
    deadline = time.monotonic() + DEADLINE_S
    launches = {world: launch(world, [(recipes[case.name], outs[case.name]) for case in sorted(
        (case for case in cases if case.world == world), key=lambda case: case.teacher)], folders[world], free_port())
        for world in worlds}
    predictions = {case.name: predict(recipes[case.name], case.world) for case in cases}
    wait(list(launches.values()), deadline)
    runs = []
    for case in cases:
        out = outs[case.name]
        ranks = {rank: json.loads((out / f"rank{rank}.json").read_text())
                 for rank in range(case.world) if (out / f"rank{rank}.json").exists()}
        done = [json.loads(path.read_text()) for path in sorted(out.glob("done*.json"))]
        errors = [record["error"] for record in done if record["error"]]
        code = launches[case.world].returncode if len(done) < case.world else int(bool(errors))
        predicted, explained = predictions[case.name]
        runs.append(Run(case=case, code=code, output="\n".join(errors) or (folders[case.world] / "launch.log").read_text(),
                        ranks=ranks, predicted=predicted, explain_output=explained))
    return runs


def measured(run: Run) -> list[dict[str, int]]:
    return [{"rank": rank, **run.ranks[rank]["bytes"]} for rank in sorted(run.ranks)]


def test_the_predicted_bytes_per_rank_equal_the_storages_stock_fsdp2_runs_allocate_and_what_stock_refuses_is_refused(
    tmp_path: Path,
) -> None:
    """Every case ran its 2 steps through the stock entry point, measured at the second step, and
    mmfreeze's parameters, gradients and optimizer bytes equal the measurement on every rank; each rank
    holds one gradient storage per FSDP2 unit with a trainable parameter, as many as mmfreeze's layout has;
    the units and the largest one's all-gather output are mmfreeze's too. Each :data:`REFUSED` case stopped
    the stock run with the framework's words, and `explain` refused it naming the key.
    (One test: under xdist, a module fixture shared by two tests could launch everything twice.)"""
    refused = {item.case.name: item for item in REFUSED}
    runs = run_all(tmp_path, (*CASES, *(item.case for item in REFUSED)))
    for run in (run for run in runs if run.case.name in refused):
        item = refused[run.case.name]
        assert run.code != 0 and item.framework_says in run.output, f"{run.case.name}:\n{run.output[-5000:]}"
        assert run.predicted is None and item.mmfreeze_says in run.explain_output, run.explain_output
    runs = [run for run in runs if run.case.name not in refused]
    for run in runs:
        name = run.case.name
        assert run.code == 0, f"{name}:\n{run.output[-5000:]}"
        assert sorted(run.ranks) == list(range(run.case.world)), name
        assert run.predicted is not None, f"{name}: explain failed:\n{run.explain_output}"
        for rank, record in run.ranks.items():
            assert record["measured_at_step"] == 2 and record["steps"] == STEPS, (name, rank)
            built = run.case.optimizer["_target_"].rpartition(".")[2]
            assert record["optimizers"] == [f"torch.optim.{built.lower()}.{built}"], (name, rank)
            assert record["shared"] == [], (name, rank, record["shared"])  # the three kinds are disjoint
    table = {run.case.name: {"measured": measured(run), "predicted": run.predicted["ranks"]} for run in runs}
    mismatched = {name: figures for name, figures in table.items() if figures["measured"] != figures["predicted"]}
    assert not mismatched, json.dumps(mismatched, indent=1)
    buffers = {run.case.name: ({r["storages"]["gradients"] for r in run.ranks.values()}, run.predicted["gradient_buffers"])
               for run in runs}
    assert all(measured == {predicted} for measured, predicted in buffers.values()), buffers  # one per FSDP2 unit
    check_units_and_peak(runs)
    check_teachers(runs)
    check_coverage(runs)


def check_units_and_peak(runs: list[Run]) -> None:
    """As many FSDP2 units as mmfreeze's layout, and its transient all-gather peak is the largest
    unit's all-gather output, to the byte (read from the units' ``FSDPParam``s at the second step)."""
    found = {}
    for run in runs:
        units = run.ranks[0]["fsdp_units"]
        largest = max(units, key=lambda unit: unit["all_gather_bytes"])
        peak = run.predicted["all_gather_peak"]
        found[run.case.name] = ((len(units), largest["all_gather_bytes"], largest["path"]),
                                (run.predicted["fsdp_units"], peak["bytes"], peak["unit"]))
    assert all(measured == predicted for measured, predicted in found.values()), json.dumps(found, indent=1)


def check_teachers(runs: list[Run]) -> None:
    """A distillation run's teacher, measured on its own: frozen whole, its parameter bytes on each rank
    (counted in the rank's parameters above), its FSDP2 units and its largest unit's all-gather output
    are mmfreeze's `memory.teacher`; a run without a teacher has none on either side."""
    found = {}
    for run in runs:
        measured_teacher, predicted = run.ranks[0]["teacher"], run.predicted.get("teacher")
        if measured_teacher is None or predicted is None:
            assert measured_teacher is None and predicted is None, (run.case.name, measured_teacher, predicted)
            continue
        assert all(run.ranks[rank]["teacher"]["trainable"] == 0 for rank in run.ranks), run.case.name
        units = measured_teacher["fsdp_units"]
        found[run.case.name] = (
            ([run.ranks[rank]["teacher"]["parameters"] for rank in sorted(run.ranks)], len(units),
             max(unit["all_gather_bytes"] for unit in units)),
            (predicted["parameters"], predicted["fsdp_units"], predicted["all_gather_peak"]["bytes"]))
    assert found and all(measured == predicted for measured, predicted in found.values()), json.dumps(found, indent=1)


def check_coverage(runs: list[Run]) -> None:
    """Ten families (one a language model alone, trained by the LLM recipe), every torch optimizer mmfreeze
    sizes, full fine-tuning with a frozen tower, LoRA, `replicate` (the tower a plain
    tensor on every rank), 4 ranks, a case whose ranks hold different optimizer bytes, classes of the
    framework's own, each sharded by that class's own parallelizer, a tensor kept in fp32 in bf16 and fp16 runs, a
    distillation teacher, and tensor parallelism in five families, one case beside data parallelism, one with LoRA,
    one under `replicate`, one distilled and one with sequence parallelism; expert parallelism with its
    experts whole on each rank and FSDP2-sharded, and with LoRA; and context parallelism on a mesh the framework
    built with it, through the generic path (a transformers class) and a class's own (Qwen3-VL), one case beside
    tensor parallelism, with the CPU attention rule asked for there and nowhere else."""
    by_name = {run.case.name: run for run in runs}
    assert {run.case.family for run in runs} == {"llava", "qwen2_5_vl", "qwen2_audio", "qwen3_vl", "gemma4",
                                                 "muse_glimmer", "voxtral", "llama", "gemma3", "qwen3_vl_moe"}
    for name, (module, parallelizer) in OWN_PARALLELIZER_CASES.items():
        built = by_name[name].ranks[0]["model_class"]
        assert built == module, (name, built)
        model_module, _, class_name = module.rpartition(".")
        assert type(getattr(importlib.import_module(model_module), class_name).parallelizer).__name__ == parallelizer
    assert any(run.case.world == 4 for run in runs)
    tensor_parallel = [run for run in runs if run.case.tp > 1]
    assert {run.case.family for run in tensor_parallel} >= {"llama", "llava", "qwen2_5_vl", "gemma3", "qwen2_audio"}
    assert any(run.case.world > run.case.tp for run in tensor_parallel), "no case with data- and tensor-parallel ranks"
    assert any(run.case.peft for run in tensor_parallel), "no LoRA under tensor parallelism"
    assert any(run.case.teacher for run in tensor_parallel), "no distillation under tensor parallelism"
    assert any(run.case.sequence_parallel for run in tensor_parallel), "no sequence parallelism"
    for run in tensor_parallel:  # a row-parallel weight is split on dim 1, which FSDP2 never splits
        [o_proj] = [p for n, p in run.ranks[0]["params"].items() if n.endswith("layers.0.self_attn.o_proj.weight")]
        assert o_proj["local_shape"][1] * run.case.tp == o_proj["shape"][1], (run.case.name, o_proj)
    expert_parallel = [run for run in runs if run.case.ep > 1]
    assert {run.case.world // run.case.ep for run in expert_parallel} == {1, 2}, "ep_shard 1 and above 1"
    assert any(run.case.peft for run in expert_parallel), "no LoRA under expert parallelism"
    for run in expert_parallel:  # each rank holds its experts alone: 6 over the expert-parallel ranks
        experts = [p for n, p in run.ranks[0]["params"].items() if n.endswith("layers.0.mlp.experts.down_projs")]
        assert [(p["shape"][0], p["local_shape"][0]) for p in experts] == [(6, 6 // run.case.ep)], (run.case.name, experts)
        assert run.ranks[0]["model_class"].endswith("qwen3_vl_moe.model.Qwen3VLMoeForConditionalGeneration")
    context_parallel = [run for run in runs if run.case.cp > 1]
    for run in runs:  # the framework built the mesh the case asks for
        assert {rank["mesh"].get("cp", 1) for rank in run.ranks.values()} == {run.case.cp}, (run.case.name, run.ranks[0]["mesh"])
    assert {run.ranks[0]["model_class"].partition(".")[0] for run in context_parallel} == {"transformers", "nemo_automodel"}
    assert any(run.case.tp > 1 for run in context_parallel), "no context parallelism beside tensor parallelism"
    for run in runs:  # the CPU attention rule (memory_runs/cpu_attention_rule.py): asked for under context parallelism alone
        assert run.case.cp > 1 or not run.ranks[0]["cpu_attention_rule"], (run.case.name, run.ranks[0]["cpu_attention_rule"])
    assert any(run.ranks[0]["cpu_attention_rule"] == ["backward", "forward"] for run in context_parallel)
    assert any(run.case.peft for run in runs) and any(run.case.frozen_sharding == "replicate" for run in runs)
    assert any(run.case.teacher for run in runs)
    from mmfreeze.memory.optimizer import TORCH_OPTIMIZERS  # Adam: AdamW's own state code (adam.py), measured as AdamW
    assert {run.case.optimizer["_target_"].rpartition(".")[2] for run in runs} == set(TORCH_OPTIMIZERS) - {"Adam"}
    replicated = by_name["qwen2_audio_replicate"].ranks[0]["params"]
    assert {p["kind"] for name, p in replicated.items() if name.startswith("model.audio_tower.")} == {"Parameter"}
    assert any(len({r["optimizer"] for r in measured(run)}) > 1 for run in runs), "no case with uneven shards"
    voxtral = [run for run in runs if run.case.family == "voxtral"]
    assert {run.case.dtype for run in voxtral} == {"bfloat16", "float16"}
    for run in voxtral:  # fp32 beside bf16 or fp16, as loaded
        params = run.ranks[0]["params"]
        assert {p["dtype"] for n, p in params.items() if "embed_positions" in n} == {"torch.float32"}, run.case.name
        assert params["model.language_model.embed_tokens.weight"]["dtype"] == f"torch.{run.case.dtype}", run.case.name
