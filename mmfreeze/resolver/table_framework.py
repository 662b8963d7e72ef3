"""NeMo AutoModel's own classes (``builder = framework``, :mod:`mmfreeze.models.framework`).

The table is keyed by class name. The framework's classes come in two kinds:

- **names transformers does not have** (``TABLE``): Kimi-K2.5-VL, Kimi-VL, LLaVA-OneVision-1.5,
  Bagel, the Gemma 4 drafter. Entries of their own.
- **names transformers has too, with another module tree** (``FRAMEWORK_PATHS``): the framework's
  MuseGlimmer and MiniMax-M3 hold the text model at ``model`` itself (no ``model.language_model``)
  and name or place the vision tower differently. Their entries gain the framework's paths as
  *later* alternatives (:func:`with_framework_paths`): the first path that exists wins, so a
  transformers tree resolves exactly as before, and the framework's tree, which lacks the
  transformers paths, falls through to its own.

Same-named classes whose trees the existing entries already resolve (measured on meta,
``tests/framework/test_framework_classes.py``): the Qwen2.5-Omni and Qwen3-Omni thinkers (the
framework builds them thinker-only, in transformers 5.18's layout), Qwen3.5(-MoE), Qwen3-VL(-MoE),
Gemma4 and Gemma4-Unified.

Decisions on contested roles:

- Kimi's ``model.language_model`` is a backend holding the DeepSeek-V3 decoder (``.model``) and
  the ``lm_head``: the decoder part is the backend, embeddings and head are declared inside it.
- LLaVA-OneVision-1.5's ``model.visual.merger`` is a projector inside the tower, as in Qwen-VL.
- Bagel's ``model.vit_pos_embed`` adds a position embedding to the connector's output (vision
  tokens in the language model's space): a projector, with the ``connector``. The SigLIP tower is
  ``model.vit_model``. Generation parts (``visual_gen``: ``vae2llm``, ``llm2vae``,
  ``latent_pos_embed``, ``time_embedder``) are declared optional, modality ``vision``, role
  ``generator``.
- MiniMax-M3's projector is two MLPs, both inside the framework's ``vision_tower``:
  ``multi_modal_projector`` (ViT width to text width) and ``patch_merge_mlp`` (2x2 merged patches
  back to text width). The checkpoint holds both at its top level, and transformers' class fuses
  them into one ``model.multi_modal_projector`` (``merge_linear_1/2``), so ``patch_merge_mlp`` is
  a projector too (:data:`FRAMEWORK_MODULES`), not part of the ViT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from mmfreeze.resolver.entry import ArchitectureEntry, ModuleDecl
from mmfreeze.resolver.table_text import GEMMA4_DRAFTER
from mmfreeze.resolver.table_parts import decl, language, standard, vision_projector, vision_tower

KIMI = ArchitectureEntry(
    modules=(vision_tower("model.vision_tower"), vision_projector("model.multi_modal_projector")),
    language_model=language("model.language_model", embeddings="model.language_model.model.embed_tokens",
                            lm_head="model.language_model.lm_head"),
)


TABLE: Mapping[str, ArchitectureEntry] = {
    # A subclass of transformers' Gemma4AssistantForCausalLM with its tree (``components/models/gemma4_drafter``).
    "Gemma4DrafterForCausalLM": GEMMA4_DRAFTER,
    "KimiK25VLForConditionalGeneration": KIMI,
    "KimiVLForConditionalGeneration": KIMI,
    "LLaVAOneVision1_5_ForConditionalGeneration": standard(
        vision_tower("model.visual"), vision_projector("model.visual.merger"),
    ),
    "BagelForUnifiedMultimodal": ArchitectureEntry(
        modules=(
            vision_tower("model.vit_model"),
            vision_projector("model.connector"),
            vision_projector("model.vit_pos_embed"),
            *(decl(f"model.{name}", modality="vision", role="generator", required=False)
              for name in ("vae2llm", "llm2vae", "latent_pos_embed", "time_embedder")),
        ),
        language_model=language("model.language_model.model", lm_head="model.language_model.lm_head"),
    ),
}
"""Framework classes whose names transformers does not use."""

_TEXT_AT_MODEL = {"model.language_model": ("model",), "model.language_model.embed_tokens": ("model.embed_tokens",)}

FRAMEWORK_PATHS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "MuseGlimmerForConditionalGeneration": {"model.vision_tower": ("model.vision_encoder",), **_TEXT_AT_MODEL},
    "MiniMaxM3SparseForConditionalGeneration": {
        "model.vision_tower": ("vision_tower",),
        "model.multi_modal_projector": ("vision_tower.multi_modal_projector",),
        **_TEXT_AT_MODEL,
    },
}
"""Class name -> transformers path -> the framework class's paths for the same module."""

FRAMEWORK_MODULES: Mapping[str, tuple[ModuleDecl, ...]] = {
    # transformers' class holds the patch merger inside ``model.multi_modal_projector``; the
    # framework's holds it as a module of its own, which transformers' tree lacks (optional).
    "MiniMaxM3SparseForConditionalGeneration": (vision_projector("vision_tower.patch_merge_mlp", required=False),),
}
"""Class name -> modules only the framework class's tree has, appended to the entry (optional)."""


def with_framework_paths(table: Mapping[str, ArchitectureEntry]) -> dict[str, ArchitectureEntry]:
    """``table`` with :data:`FRAMEWORK_PATHS` appended as later alternatives and
    :data:`FRAMEWORK_MODULES` as further modules; a class or path missing from ``table`` is an
    error (the mapping went stale)."""
    merged = dict(table)
    for name, alternatives in FRAMEWORK_PATHS.items():
        entry = merged[name]
        used = {path for item in (*entry.modules, *entry.language_model) for path in item.paths}
        stale = sorted(set(alternatives) - used)
        if stale:
            raise RuntimeError(f"FRAMEWORK_PATHS[{name!r}] names paths its entry does not declare: {stale}")
        merged[name] = replace(
            entry,
            modules=tuple(replace(m, paths=_extended(m.paths, alternatives)) for m in entry.modules),
            language_model=tuple(replace(p, paths=_extended(p.paths, alternatives)) for p in entry.language_model),
        )
    for name, modules in FRAMEWORK_MODULES.items():
        if any(module.required for module in modules):
            raise RuntimeError(f"FRAMEWORK_MODULES[{name!r}]: a framework-only module must be optional")
        merged[name] = replace(merged[name], modules=(*merged[name].modules, *modules))
    return merged


def _extended(paths: tuple[str, ...], alternatives: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    extra = [alt for path in paths for alt in alternatives.get(path, ())]
    return tuple(dict.fromkeys((*paths, *extra)))
