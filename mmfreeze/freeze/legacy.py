"""The legacy `freeze_config` engine, reproduced exactly, accidents included.

Historical behaviour (nemo-automodel before 0.7, ``apply_parameter_freezing``): nothing happens when the section is absent; an empty section
still freezes vision (``freeze_vision_tower`` defaults to true). Each true flag freezes the root
attribute of its name if the root object has one, and every module whose full dotted name,
lowercased, contains one of the flag's substrings. ``freeze_video_embedder`` matches parameter
names instead. Values count by truthiness (the string ``"false"`` is true); every other key —
``freeze_embeddings`` included — is ignored; only ``requires_grad=False`` is ever set.

The accidents that follow are load-bearing for existing recipes, so they are kept: the vision flag
freezes Gemma's ``embed_vision`` and Qwen's ``visual.merger`` (projectors) but never a
``multi_modal_projector``; the language flag freezes a tied ``lm_head`` (it is the embedding) and
leaves an untied one trainable; adapters injected inside a matched module are frozen too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.freeze.keys import LEGACY_FLAG_KEYS, VIDEO_EMBEDDER_KEY
from mmfreeze.freeze.plan import FreezePlan, parameters_under_any, plan_from_matches
from mmfreeze.models.structure import ModelStructure


@dataclass(frozen=True, kw_only=True)
class LegacyFlag:
    """One legacy module flag: its default, the root attribute and the name substrings it freezes."""

    key: str
    default: bool
    root_attribute: str | None
    substrings: tuple[str, ...]


_VISION, _AUDIO, _LANGUAGE = LEGACY_FLAG_KEYS
LEGACY_FLAGS = (
    LegacyFlag(key=_VISION, default=True, root_attribute="vision_tower",
               substrings=("vision", "visual", "image_encoder")),
    LegacyFlag(key=_AUDIO, default=False, root_attribute="audio_tower",
               substrings=("audio", "audio_encoder", "speech", "sound")),
    LegacyFlag(key=_LANGUAGE, default=False, root_attribute="language_model",
               substrings=("language", "text", "llm")),
)
VIDEO_EMBEDDER_SUBSTRING = "patch_generator.video_embedder"


def plan_legacy_freeze(structure: ModelStructure, freeze_config: Mapping[str, Any] | None) -> FreezePlan:
    """The parameters the legacy engine freezes; ``None`` means the section is absent."""
    if freeze_config is None:
        return FreezePlan()
    return plan_from_matches(_legacy_matches(structure, freeze_config))


def _legacy_matches(structure: ModelStructure, freeze_config: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for flag in LEGACY_FLAGS:
        if freeze_config.get(flag.key, flag.default):
            yield from flag_matches(structure, flag)
    if freeze_config.get(VIDEO_EMBEDDER_KEY, False):
        rule = f"{VIDEO_EMBEDDER_KEY}: parameter name contains {VIDEO_EMBEDDER_SUBSTRING!r}"
        for info in structure.parameters:
            if VIDEO_EMBEDDER_SUBSTRING in info.name:
                yield info.name, rule


def flag_matches(structure: ModelStructure, flag: LegacyFlag) -> Iterator[tuple[str, str]]:
    """The flag's root attribute and every module whose lowercased path contains a substring."""
    attribute_path = structure.root_attributes.get(flag.root_attribute) if flag.root_attribute else None
    if attribute_path is not None:
        rule = f"{flag.key}: root attribute {flag.root_attribute!r}"
        for name in parameters_under_any(structure, [attribute_path]):
            yield name, rule
    # named_modules() in the legacy code yields each module object once, under its first path.
    matched = [
        path for path in structure.modules
        if path not in structure.module_aliases and _matching_substring(path, flag) is not None
    ]
    for name, path in parameters_under_any(structure, matched).items():
        yield name, f"{flag.key}: module name contains {_matching_substring(path, flag)!r}"


def _matching_substring(path: str, flag: LegacyFlag) -> str | None:
    lowered = path.lower()
    return next((s for s in flag.substrings if s in lowered), None)
