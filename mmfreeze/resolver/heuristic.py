"""Leaf-name fallback for classes neither declaring themselves nor listed in the table.

Matches the last path segment exactly (never a substring, so ``text_model.visual_proj`` is not a
vision tower and ``language_model`` never matches a ViT). A projector's modality is only known
when the model has towers of a single modality; otherwise its role stays, but its modality is the
first tower's and the warning says so. Every guess is logged once per class, naming what was
guessed, so a missing table entry is never silent.
"""

from __future__ import annotations

import logging
from functools import cache

from mmfreeze.resolver.canonical import CanonicalStructure
from mmfreeze.resolver.entry import ArchitectureEntry, LanguagePart, ModuleDecl
from mmfreeze.resolver.paths import is_under_any

logger = logging.getLogger(__name__)

# Leaf name -> (modality, role); modality None means "the towers' modality".
LEAF_NAMES: dict[str, tuple[str | None, str | None]] = {
    **dict.fromkeys(("vision_tower", "visual", "vision_model", "vision_encoder", "image_encoder", "image_tower"),
                    ("vision", "tower")),
    "video_tower": ("video", "tower"),
    **dict.fromkeys(("audio_tower", "audio_encoder", "audio_model", "speech_encoder"), ("audio", "tower")),
    **dict.fromkeys(("multi_modal_projector", "mm_projector", "connector"), (None, "projector")),
    "vision_projection": ("vision", "projector"),
    "audio_projection": ("audio", "projector"),
    "embed_vision": ("vision", "embedder"),
    "embed_audio": ("audio", "embedder"),
    "perceiver_resampler": ("vision", "resampler"),
}
LANGUAGE_LEAF_NAMES = {"language_model": "decoder", "text_model": "decoder", "llm": "decoder", "lm_head": "lm_head"}
MAX_DEPTH = 3


def guess_entry(structure: CanonicalStructure) -> ArchitectureEntry:
    """An entry built from leaf names alone (see the module docstring)."""
    shallow = [path for path in structure.modules if path and path.count(".") < MAX_DEPTH]
    towers = [path for path in shallow if LEAF_NAMES.get(_leaf(path), (None, None))[1] == "tower"]
    tower_modality = LEAF_NAMES[_leaf(towers[0])][0] if towers else "vision"
    modules = tuple(
        ModuleDecl(paths=(path,), modality=modality or tower_modality, role=role)
        for path in shallow
        if _leaf(path) in LEAF_NAMES
        for modality, role in [LEAF_NAMES[_leaf(path)]]
    )
    language = tuple(
        LanguagePart(paths=(path,), part=LANGUAGE_LEAF_NAMES[_leaf(path)])
        for path in shallow
        if _leaf(path) in LANGUAGE_LEAF_NAMES and not is_under_any(path, [d.paths[0] for d in modules])
    )
    return ArchitectureEntry(modules=modules, language_model=language)


def warn_guessed(class_name: str, entry: ArchitectureEntry) -> None:
    """Log what the heuristic guessed for ``class_name`` (once per class and guess)."""
    modules = ", ".join(f"{d.paths[0]} ({d.modality}/{d.role})" for d in entry.modules) or "nothing"
    language = ", ".join(f"{p.paths[0]} ({p.part})" for p in entry.language_model) or "nothing"
    _warn_once(class_name, f"multimodal modules: {modules}; language model: {language}")


@cache
def _warn_once(class_name: str, guessed: str) -> None:
    logger.warning(
        "%s is not in the mmfreeze architecture table and declares no mmfreeze_architecture; "
        "guessed from leaf names: %s. Declare it or pass override_specs to be exact.",
        class_name,
        guessed,
    )


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]

