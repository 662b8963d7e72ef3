"""Architectures with their own layout: root-level towers, encoder-decoders, embedders, generators.

Decisions on contested roles:

- Gemma3n / Gemma4 ``embed_vision`` / ``embed_audio``: role ``embedder`` of their modality, not
  ``projector``: besides projecting tower features they hold the soft/hard token embedding tables
  of that modality. Both are declared (same class, sibling modules) so sharding treats them alike.
  Gemma4's towers exist only when the config has ``vision_config`` / ``audio_config``, so they and
  their embedders are declared ``required=False``; Gemma4-Unified has no towers at all.
- Llama4's ``vision_model`` and ``multi_modal_projector`` sit at the root next to
  ``language_model`` (a ``Llama4ForCausalLM``): tower and projector; ``vision_model.vision_adapter``
  (pixel-shuffle MLP) stays in the tower since it still outputs the tower's width.
- Phi-4-multimodal ``model.embed_tokens_extend`` is not one module: ``image_embed`` and
  ``audio_embed`` are declared as vision / audio projectors (they own the projections and the
  separator parameters), with their encoders ``img_processor`` / ``encoder`` as towers inside.
- Idefics (v1) ``gated_cross_attn_layers``: vision ``cross_attention`` modules interleaved with
  the decoder; they are new weights that read image states, not part of the text decoder.
- Janus / Emu-style image generation heads (VQ model, generation embeddings, aligner and head):
  modality ``vision``, role ``generator``.
"""

from __future__ import annotations

from dataclasses import replace

from mmfreeze.resolver.entry import ArchitectureEntry, LanguagePart, ModuleDecl, Unowned
from mmfreeze.resolver.table_parts import (
    decl, language, other, projector, standard, tower, vision_projector, vision_tower,
)


def optional(*decls: ModuleDecl) -> tuple[ModuleDecl, ...]:
    return tuple(replace(d, required=False) for d in decls)


BLIP2_FAMILY = ArchitectureEntry(
    modules=(vision_tower("vision_model"), decl("qformer", modality="vision", role="resampler"), vision_projector("language_projection")),
    language_model=language("language_model.model", embeddings="language_model.model.decoder.embed_tokens", lm_head="language_model.lm_head"),
    unowned=(Unowned(path="query_tokens", reason="learned Q-Former queries held by the root model"),),
)

IDEFICS2_FAMILY = ArchitectureEntry(
    modules=(vision_tower("model.vision_model"), vision_projector("model.connector")),
    language_model=language("model.text_model"),
)

FLAT_LANGUAGE = (*language("model.layers", embeddings="model.embed_tokens"), other("model.norm"))
"""A decoder whose layers, embeddings and norm sit directly under ``model``."""

KOSMOS2_FAMILY = ArchitectureEntry(
    modules=(vision_tower("vision_model"), vision_projector("image_to_text_projection")),
    language_model=language("text_model.model", lm_head="text_model.lm_head"),
)

TABLE = {
    **dict.fromkeys(
        (
            "Blip2ForConditionalGeneration",
            "InstructBlipForConditionalGeneration",
            "InstructBlipVideoForConditionalGeneration",
        ),
        BLIP2_FAMILY,
    ),
    **dict.fromkeys(
        (
            "Idefics2ForConditionalGeneration",
            "Idefics3ForConditionalGeneration",
            "SmolVLMForConditionalGeneration",
        ),
        IDEFICS2_FAMILY,
    ),
    "Kosmos2ForConditionalGeneration": KOSMOS2_FAMILY,
    "Kosmos2_5ForConditionalGeneration": KOSMOS2_FAMILY,
    "GraniteDoclingForConditionalGeneration": ArchitectureEntry(
        modules=(vision_tower("model.vision_model"), vision_projector("model.vision_model.connector")),
        language_model=language("model.text_model"),
    ),
    "BlipForConditionalGeneration": ArchitectureEntry(
        modules=(vision_tower("vision_model"),),
        language_model=language("text_decoder.bert", embeddings="text_decoder.bert.embeddings",
                                lm_head="text_decoder.cls"),
    ),
    "VisionEncoderDecoderModel": ArchitectureEntry(
        modules=(decl("encoder", modality="vision", role="tower", conditionally_executed=False),),
        language_model=(LanguagePart(paths=("decoder",), part="decoder"),),
    ),
    "Pix2StructForConditionalGeneration": ArchitectureEntry(
        modules=(vision_tower("encoder"),),
        language_model=language("decoder", lm_head="decoder.lm_head"),
    ),
    "PPFormulaNetForConditionalGeneration": ArchitectureEntry(
        modules=(vision_tower("model.encoder"), vision_projector("model.encoder.multi_modal_projector")),
        language_model=language("model.decoder"),
    ),
    "T5Gemma2ForConditionalGeneration": ArchitectureEntry(
        modules=(vision_tower("model.encoder.vision_tower"), vision_projector("model.encoder.multi_modal_projector")),
        language_model=(*language("model.encoder.text_model", lm_head="lm_head"), other("model.decoder")),
    ),
    # UDOP embeds image patches inside the T5 encoder (``patch_embed`` is tied to
    # ``encoder.embed_patches``) and adds 2-D cell embeddings for layout.
    "UdopForConditionalGeneration": ArchitectureEntry(
        modules=(decl("patch_embed", modality="vision", role="embedder"),),
        language_model=(*language("encoder", embeddings="shared", lm_head="lm_head"), other("decoder")),
    ),
    "GitForCausalLM": ArchitectureEntry(
        modules=(vision_tower("git.image_encoder"), vision_projector("git.visual_projection")),
        language_model=language("git.encoder", embeddings="git.embeddings", lm_head="output"),
    ),
    # Fuyu has no tower: image patches go through one linear layer into the decoder.
    "FuyuForCausalLM": standard(decl("model.vision_embed_tokens", modality="vision", role="embedder")),
    "Llama4ForConditionalGeneration": ArchitectureEntry(
        modules=(vision_tower("vision_model"), vision_projector("multi_modal_projector")),
        language_model=language("language_model.model", lm_head="language_model.lm_head"),
    ),
    "NemotronH_Omni_Reasoning_V3": ArchitectureEntry(
        modules=(vision_tower("vision_model"), vision_projector("multi_modal_projector")),
        language_model=language("language_model.model", embeddings="language_model.model.embeddings", lm_head="language_model.lm_head"),
    ),
    "IdeficsForVisionText2Text": ArchitectureEntry(
        modules=(
            vision_tower("model.vision_model"),
            decl("model.gated_cross_attn_layers", modality="vision", role="cross_attention"),
            decl("model.perceiver_resampler", modality="vision", role="resampler", required=False),
        ),
        language_model=FLAT_LANGUAGE,
    ),
    "Phi4MultimodalForCausalLM": ArchitectureEntry(
        modules=(
            vision_projector("model.embed_tokens_extend.image_embed"),
            vision_tower("model.embed_tokens_extend.image_embed.img_processor"),
            projector("model.embed_tokens_extend.audio_embed", modality="audio"),
            tower("model.embed_tokens_extend.audio_embed.encoder", modality="audio"),
        ),
        language_model=FLAT_LANGUAGE,
    ),
    "JanusForConditionalGeneration": standard(
        vision_tower("model.vision_model"),
        vision_projector("model.aligner"),
        decl("model.vqmodel", modality="vision", role="generator"),
        decl("model.generation_embeddings", modality="vision", role="generator"),
        decl("model.generation_aligner", modality="vision", role="generator"),
        decl("model.generation_head", modality="vision", role="generator"),
    ),
    "Gemma3nForConditionalGeneration": standard(
        vision_tower("model.vision_tower"),
        decl("model.embed_vision", modality="vision", role="embedder"),
        tower("model.audio_tower", modality="audio"),
        decl("model.embed_audio", modality="audio", role="embedder"),
    ),
    "Gemma4ForConditionalGeneration": standard(*optional(
        vision_tower("model.vision_tower"),
        decl("model.embed_vision", modality="vision", role="embedder"),
        tower("model.audio_tower", modality="audio"),
        decl("model.embed_audio", modality="audio", role="embedder"),
    )),
    "Gemma4UnifiedForConditionalGeneration": standard(*optional(
        decl("model.embed_vision", modality="vision", role="embedder"),
        decl("model.embed_audio", modality="audio", role="embedder"),
    )),
    "Ernie4_5_VLMoeForConditionalGeneration": standard(
        vision_tower("model.vision_tower"), decl("model.resampler_model", modality="vision", role="resampler"),
    ),
    "InklingForConditionalGeneration": standard(
        vision_tower("model.vision_tower"), tower("model.audio_tower", modality="audio"),
    ),
    # Apertus tokenizes images and audio into discrete tokens the decoder reads as text.
    "Apertus1p5ForConditionalGeneration": standard(
        decl("model.vision_tokenizer", modality="vision", role="tokenizer"),
        decl("model.audio_tokenizer", modality="audio", role="tokenizer"),
    ),
    # A protein-language model: the open modality string at work.
    "EvollaForProteinText2Text": ArchitectureEntry(
        modules=(
            tower("model.protein_encoder.model", modality="protein"),
            decl("model.protein_encoder.sequence_compressor_resampler", modality="protein", role="resampler"),
        ),
        language_model=FLAT_LANGUAGE,
    ),
    # A vision-language-action policy: the PaliGemma VLM is the language model's context, the
    # action expert (``dit``) and action embeddings are the ``action`` modality.
    "PI0ForConditionalGeneration": ArchitectureEntry(
        modules=(
            vision_tower("model.vlm.vision_tower"),
            vision_projector("model.vlm.multi_modal_projector"),
            decl("model.dit", modality="action", role="expert", conditionally_executed=False),
            decl("embed_action_time", modality="action", role="embedder", conditionally_executed=False),
            decl("action_out_proj", modality="action", role="head", conditionally_executed=False),
        ),
        language_model=language("model.vlm.language_model", lm_head=None),
    ),
    # Listed in transformers' multimodal-LM mapping but text-only: nothing multimodal to resolve.
    "Mistral4ForCausalLM": ArchitectureEntry(
        modules=(),
        language_model=FLAT_LANGUAGE,
    ),
}
