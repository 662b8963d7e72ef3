"""The declaration schema shared by the central table and by model classes.

An :class:`ArchitectureEntry` says, for one architecture, which submodules are multimodal (with
modality, role and whether the forward may skip them), which parts make up the language model,
and which parameters belong to neither, with the reason. It is pure data: paths are strings, and
several alternative paths may be listed where transformers releases differ (the first that exists
wins).

A model author declares the same thing on the class itself, which takes precedence over the table::

    class MyVLM(PreTrainedModel):
        mmfreeze_architecture = ArchitectureEntry(
            modules=(ModuleDecl(paths=("encoder",), modality="vision", role="tower"),),
            language_model=(LanguagePart(paths=("decoder",), part="decoder"),),
        )
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CLASS_ATTRIBUTE = "mmfreeze_architecture"
"""Name of the class attribute holding a model class's own :class:`ArchitectureEntry`."""

LanguagePartName = Literal["decoder", "embeddings", "lm_head", "other"]


@dataclass(frozen=True, kw_only=True)
class ModuleDecl:
    """One multimodal submodule; ``paths`` are alternatives, the first that exists is used."""

    paths: tuple[str, ...]
    modality: str
    """Required, as in :class:`~mmfreeze.resolver.spec.MultimodalModuleSpec`: no silent default."""
    role: str | None = None
    conditionally_executed: bool = True
    required: bool = True
    """``False`` for a submodule the config may leave out (Gemma4 without ``audio_config``)."""


@dataclass(frozen=True, kw_only=True)
class LanguagePart:
    """One part of the language model; ``paths`` are alternatives, the first that exists is used.

    ``decoder`` is the transformer stack (usually with its embeddings and final norm inside);
    ``embeddings`` the token embedding, ``lm_head`` the output projection (tied or not: tying is
    read from the structure, never declared); ``other`` anything else only the text path uses.
    """

    paths: tuple[str, ...]
    part: LanguagePartName


@dataclass(frozen=True, kw_only=True)
class Unowned:
    """Parameters (a parameter name, or every parameter under a module path) that belong to no
    multimodal module and not to the language model, and why."""

    path: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class ArchitectureEntry:
    """Everything the resolver needs to know about one architecture."""

    modules: tuple[ModuleDecl, ...]
    language_model: tuple[LanguagePart, ...]
    unowned: tuple[Unowned, ...] = ()
