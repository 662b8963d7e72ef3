"""Qwen-style models: the projector (``merger``) lives inside the vision tower ``visual``.

Decisions on contested roles:

- ``visual.merger`` is a projector inside the tower: it survives next to ``visual`` (the
  parent/child rule), so "freeze the tower, train the projector" works.
- Qwen3-VL ``visual.deepstack_merger_list`` (Qwen3-Omni ``visual.merger_list``): projectors too.
  They map intermediate ViT features into the language model's hidden size, exactly like
  ``merger``; fine-tuning frameworks that list only ``merger`` leave them frozen with the tower.
  ``visual.pos_embed`` is the tower's (it is applied to patch embeddings before the blocks).
- Omni audio towers end in the projection to the language model's width (Qwen2.5-Omni ``proj``,
  Qwen3-Omni ``proj1`` / ``proj2``): declared as audio projectors for the same reason.
- Qwen2.5-Omni ``talker`` and ``token2wav`` generate speech from the thinker's output: modality
  ``audio``, role ``generator``; they run only when audio output is requested.

Module trees that differ between the transformers releases CI tests (5.24.0 and 5.18.0): the Omni
thinkers. 5.24 nests the towers and the text model under ``model`` (``model.visual``,
``model.audio_tower``, ``model.language_model``); 5.18 holds the towers on the thinker itself and
``model`` *is* the text model. Each entry lists the 5.24 path first: ``model`` exists in 5.24 too
(as the wrapper), and the first path that exists wins.
"""

from __future__ import annotations

from mmfreeze.resolver.entry import ArchitectureEntry, LanguagePart
from mmfreeze.resolver.table_parts import decl, projector, standard, tower, vision_projector, vision_tower


def visual_with_merger(*projectors: str, visual: str = "model.visual") -> ArchitectureEntry:
    return standard(vision_tower(visual), *(vision_projector(p) for p in projectors))


QWEN2_VL = visual_with_merger("model.visual.merger")
QWEN3_VL = visual_with_merger("model.visual.merger", "model.visual.deepstack_merger_list")

OMNI_THINKER_LANGUAGE = (
    LanguagePart(paths=("model.language_model", "model"), part="decoder"),  # second path: transformers 5.18
    LanguagePart(
        paths=("model.language_model.embed_tokens", "model.embed_tokens"),  # second path: transformers 5.18
        part="embeddings",
    ),
    LanguagePart(paths=("lm_head",), part="lm_head"),
)

# transformers 5.18 holds the towers on the thinker, not under ``model``.
QWEN2_5_OMNI_THINKER = ArchitectureEntry(
    modules=(
        vision_tower("model.visual", "visual"),  # second path: transformers 5.18
        vision_projector("model.visual.merger", "visual.merger"),  # second path: transformers 5.18
        tower("model.audio_tower", "audio_tower", modality="audio"),  # second path: transformers 5.18
        projector("model.audio_tower.proj", "audio_tower.proj", modality="audio"),  # second path: transformers 5.18
    ),
    language_model=OMNI_THINKER_LANGUAGE,
)

QWEN3_OMNI_THINKER = ArchitectureEntry(
    modules=(
        vision_tower("model.visual", "visual"),  # second path: transformers 5.18
        vision_projector("model.visual.merger", "visual.merger"),  # second path: transformers 5.18
        vision_projector("model.visual.merger_list", "visual.merger_list"),  # second path: transformers 5.18
        tower("model.audio_tower", "audio_tower", modality="audio"),  # second path: transformers 5.18
        projector("model.audio_tower.proj1", "audio_tower.proj1", modality="audio"),  # second path: transformers 5.18
        projector("model.audio_tower.proj2", "audio_tower.proj2", modality="audio"),  # second path: transformers 5.18
    ),
    language_model=OMNI_THINKER_LANGUAGE,
)


def omni(thinker: ArchitectureEntry, *generators: str) -> ArchitectureEntry:
    """A full Omni model: its thinker's modules and language model under ``thinker.`` (with the
    same alternative paths), and the speech generators (talker, code-to-waveform) as audio
    ``generator`` modules the text path never runs."""
    return ArchitectureEntry(
        modules=tuple(
            decl(*(f"thinker.{p}" for p in d.paths), modality=d.modality, role=d.role) for d in thinker.modules
        )
        + tuple(decl(generator, modality="audio", role="generator") for generator in generators),
        language_model=tuple(
            LanguagePart(paths=tuple(f"thinker.{p}" for p in part.paths), part=part.part)
            for part in thinker.language_model
        ),
    )


QWEN2_5_OMNI = omni(QWEN2_5_OMNI_THINKER, "talker", "token2wav")
QWEN3_OMNI = omni(QWEN3_OMNI_THINKER, "talker", "code2wav")

TABLE = {
    **dict.fromkeys(
        (
            "Qwen2VLForConditionalGeneration",
            "Qwen2_5_VLForConditionalGeneration",
            "Exaone4_5_ForConditionalGeneration",
            "Glm4vForConditionalGeneration",
            "Glm46VForConditionalGeneration",
            "Glm4vMoeForConditionalGeneration",
            "Glm5NextForConditionalGeneration",
            "GlmOcrForConditionalGeneration",
            # Qwen3.5 keeps Qwen3-VL's tower without the deepstack mergers.
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5MoeForConditionalGeneration",
        ),
        QWEN2_VL,
    ),
    **dict.fromkeys(
        (
            "Qwen3VLForConditionalGeneration",
            "Qwen3VLMoeForConditionalGeneration",
            "Cosmos3OmniForConditionalGeneration",
        ),
        QWEN3_VL,
    ),
    # A Qwen2.5-VL tower under another name, with a linear projector after it.
    "HyperCLOVAXVisionV2ForConditionalGeneration": visual_with_merger(
        "model.vision_model.merger", "model.projector", visual="model.vision_model"
    ),
    "Cosmos3EdgeForConditionalGeneration": visual_with_merger("model.projector"),
    "PaddleOCRVLForConditionalGeneration": visual_with_merger("model.projector"),
    "Dots3NoteForConditionalGeneration": standard(
        vision_tower("model.vision_tower"),
        vision_projector("model.vision_tower.merger"),
        tower("model.audio_tower", modality="audio"),
        projector("model.audio_tower.adapter", modality="audio"),
    ),
    "HYV4VLForConditionalGeneration": visual_with_merger("model.vision_tower.patch_merger", visual="model.vision_tower"),
    "Inkling2ForConditionalGeneration": visual_with_merger("model.vision_tower.merger", visual="model.vision_tower"),
    "Inkling2LoopForConditionalGeneration": visual_with_merger("model.vision_tower.merger", visual="model.vision_tower"),
    "Qwen2_5OmniThinkerForConditionalGeneration": QWEN2_5_OMNI_THINKER,
    "Qwen3OmniMoeThinkerForConditionalGeneration": QWEN3_OMNI_THINKER,
    "Qwen2_5OmniForConditionalGeneration": QWEN2_5_OMNI,
    "Qwen3OmniMoeForConditionalGeneration": QWEN3_OMNI,
}
