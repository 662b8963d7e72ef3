"""Vision-language models laid out as tower + projector + language model under ``model``.

Each key is a transformers class name; several classes share one entry object where their
structure is the same. Differences from the standard layout are written next to the entry.
"""

from __future__ import annotations

from mmfreeze.resolver.entry import ArchitectureEntry, Unowned
from mmfreeze.resolver.table_parts import (
    IMAGE_NEWLINE, decl, language, standard, tower, vision_projector, vision_tower, vision_tower_and_projector,
)

STANDARD = vision_tower_and_projector()
WITH_IMAGE_NEWLINE = vision_tower_and_projector(unowned=(IMAGE_NEWLINE,))

LLAVA_FAMILY = {
    name: STANDARD
    for name in (
        "AriaForConditionalGeneration",
        "AyaVisionForConditionalGeneration",
        "Cohere2VisionForConditionalGeneration",
        "FastVlmForConditionalGeneration",
        "Gemma3ForConditionalGeneration",
        "GotOcr2ForConditionalGeneration",
        "InternVLForConditionalGeneration",
        "Lfm2VlForConditionalGeneration",
        "Lfm3VlForConditionalGeneration",
        "LlavaForConditionalGeneration",
        "MiniMaxM3SparseForConditionalGeneration",
        "Mistral3ForConditionalGeneration",
        "MistralLarge4ForConditionalGeneration",
        "Molmo2ForConditionalGeneration",
        "PaliGemmaForConditionalGeneration",
        "QianfanOCRForConditionalGeneration",
        "VipLlavaForConditionalGeneration",
    )
} | {
    name: WITH_IMAGE_NEWLINE
    for name in (
        "LlavaNextForConditionalGeneration",
        "LlavaNextVideoForConditionalGeneration",
        "LlavaOnevisionForConditionalGeneration",
    )
}

OTHER_NAMES = {
    "UnlimitedOcrForConditionalGeneration": vision_tower_and_projector(
        unowned=(
            IMAGE_NEWLINE,
            Unowned(path="model.view_separator", reason="learned separator between image views, held by the wrapper"),
        )
    ),
    # Florence-2's language model is an encoder-decoder BART; its token embedding is ``shared``.
    "Florence2ForConditionalGeneration": ArchitectureEntry(
        modules=STANDARD.modules,
        language_model=language("model.language_model", embeddings="model.language_model.shared"),
    ),
    "Step3p7ForConditionalGeneration": vision_tower_and_projector("model.vision_model"),
    "MllamaForConditionalGeneration": vision_tower_and_projector("model.vision_model"),
    "LightOnOcrForConditionalGeneration": vision_tower_and_projector("model.vision_encoder", "model.vision_projection"),
    "VideoLlama3ForConditionalGeneration": vision_tower_and_projector("model.vision_model", "model.projector"),
    "DeepseekVLForConditionalGeneration": vision_tower_and_projector("model.vision_model", "model.aligner"),
    "Kimi_K25ForConditionalGeneration": vision_tower_and_projector("model.vision_tower", "model.mm_projector"),
    # MiniCPM-V: the ``merger`` after the tower is the projector; ``vit_merger`` inside the tower
    # merges windows between ViT blocks, so it stays tower.
    **dict.fromkeys(
        (
            "MiniCPMOcrForConditionalGeneration",
            "MiniCPMV4_6ForConditionalGeneration",
            "MiniCPMV4_7ForConditionalGeneration",
        ),
        vision_tower_and_projector("model.vision_tower", "model.merger"),
    ),
    # Ovis2 maps visual tokens through a probabilistic embedding table instead of a projector.
    "Ovis2ForConditionalGeneration": standard(
        vision_tower("model.vision_tower"), decl("model.visual_embeddings_table", modality="vision", role="embedder"),
    ),
    # Ovis2.5 (transformers 5.25): inside ``multi_modal_projector``, ``visual_tokenizer`` turns tower
    # features into probabilities over a visual vocabulary (a projector), and
    # ``visual_embeddings_table`` is that vocabulary's embedding table (an embedder, as in Ovis2).
    "Ovis2_5ForConditionalGeneration": standard(
        vision_tower("model.vision_tower"),
        vision_projector("model.multi_modal_projector.visual_tokenizer"),
        decl("model.multi_modal_projector.visual_embeddings_table", modality="vision", role="embedder"),
    ),
    # LLaVA-OneVision-1.5 (transformers 5.25; the framework's own class: table_framework.py): the
    # merger is a projector inside the tower, as in Qwen-VL.
    "LlavaOnevision15ForConditionalGeneration": standard(
        vision_tower("model.visual"), vision_projector("model.visual.merger"),
    ),
    # Two CLIP towers, one per input kind, sharing one projector.
    "VideoLlavaForConditionalGeneration": standard(
        vision_tower("model.image_tower"),
        tower("model.video_tower", modality="video"),
        vision_projector("model.multi_modal_projector"),
    ),
    "DeepseekVLHybridForConditionalGeneration": standard(
        vision_tower("model.vision_model"),
        vision_tower("model.high_res_vision_model"),
        decl("model.high_res_vision_neck", modality="vision", role="tower"),
        vision_projector("model.high_res_vision_proj"),
        vision_projector("model.aligner"),
        unowned=(
            Unowned(
                path="model.high_res_vision_alpha",
                reason="scalar gate mixing the two towers' features, held by the wrapper model",
            ),
        ),
    ),
    "MuseGlimmerForConditionalGeneration": standard(
        vision_tower("model.vision_tower"), vision_projector("model.vision_adapter"),
        vision_projector("model.vision_projection"),
    ),
    "MuseSparkForConditionalGeneration": standard(
        vision_tower("model.vision_tower"),
        vision_projector("model.vision_adapter"),
        vision_projector("model.vision_projection"),
        tower("model.audio_tower", modality="audio"),
    ),
}

TABLE = LLAVA_FAMILY | OTHER_NAMES
