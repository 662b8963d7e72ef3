"""Building blocks the table files share, so an entry reads as what differs from the usual layout."""

from __future__ import annotations

from mmfreeze.resolver.entry import ArchitectureEntry, LanguagePart, ModuleDecl, Unowned


# Every helper states its modality (in its name or as a required keyword): an entry never becomes
# vision by default.


def tower(*paths: str, modality: str, required: bool = True) -> ModuleDecl:
    return ModuleDecl(paths=paths, modality=modality, role="tower", required=required)


def projector(*paths: str, modality: str, required: bool = True) -> ModuleDecl:
    return ModuleDecl(paths=paths, modality=modality, role="projector", required=required)


def vision_tower(*paths: str, required: bool = True) -> ModuleDecl:
    return tower(*paths, modality="vision", required=required)


def vision_projector(*paths: str, required: bool = True) -> ModuleDecl:
    return projector(*paths, modality="vision", required=required)


def decl(
    *paths: str, modality: str, role: str, required: bool = True, conditionally_executed: bool = True
) -> ModuleDecl:
    return ModuleDecl(
        paths=paths, modality=modality, role=role, required=required, conditionally_executed=conditionally_executed
    )


def language(decoder: str, *, embeddings: str | None = None, lm_head: str | None = "lm_head") -> tuple[LanguagePart, ...]:
    """Decoder stack, its token embeddings (default ``<decoder>.embed_tokens``) and the lm_head."""
    parts = [
        LanguagePart(paths=(decoder,), part="decoder"),
        LanguagePart(paths=(embeddings or f"{decoder}.embed_tokens",), part="embeddings"),
    ]
    if lm_head is not None:
        parts.append(LanguagePart(paths=(lm_head,), part="lm_head"))
    return tuple(parts)


def other(*paths: str) -> LanguagePart:
    return LanguagePart(paths=paths, part="other")


# The layout of most transformers 5 VLMs: ``model.{vision_tower, multi_modal_projector,
# language_model}`` and a root ``lm_head``.
STANDARD_LANGUAGE = language("model.language_model")


def standard(*modules: ModuleDecl, unowned: tuple[Unowned, ...] = ()) -> ArchitectureEntry:
    """``modules`` beside ``STANDARD_LANGUAGE``."""
    return ArchitectureEntry(modules=modules, language_model=STANDARD_LANGUAGE, unowned=unowned)


def vision_tower_and_projector(
    tower_path: str = "model.vision_tower",
    projector_path: str = "model.multi_modal_projector",
    *,
    unowned: tuple[Unowned, ...] = (),
) -> ArchitectureEntry:
    """The standard VLM layout: a vision tower and projector beside ``STANDARD_LANGUAGE``."""
    return standard(vision_tower(tower_path), vision_projector(projector_path), unowned=unowned)


IMAGE_NEWLINE = Unowned(
    path="model.image_newline",
    reason="learned row separator held by the wrapper model itself, outside every submodule",
)
