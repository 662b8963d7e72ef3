"""The keys of a `freeze_config` section and which vocabulary a section is in (pure, no engine).

nemo-automodel 0.7 accepts six keys: the legacy booleans and the two selector lists. Recipes also
carry ``freeze_embeddings``, which no release read (0.7 rejects it). Everything else is the new
`(modality, role)` vocabulary. This module imports nothing heavier than the suggestions helper:
the snapshot report reads every recipe's vocabulary on a warm check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.suggest import did_you_mean

SECTION = "freeze_config"
SELECTOR_KEYS = ("freeze_modules", "unfreeze_modules")
LEGACY_FLAG_KEYS = ("freeze_vision_tower", "freeze_audio_tower", "freeze_language_model")
VIDEO_EMBEDDER_KEY = "freeze_video_embedder"
BOOLEAN_KEYS = (*LEGACY_FLAG_KEYS, VIDEO_EMBEDDER_KEY)
FRAMEWORK_KEYS = (*SELECTOR_KEYS, *BOOLEAN_KEYS)
"""The six keys nemo-automodel 0.7's ``parse_freeze_config`` accepts."""
IGNORED_KEYS = ("freeze_embeddings",)
"""Read by nothing in the legacy training code, yet common in recipes."""
RELEASE_06_KEYS = (*BOOLEAN_KEYS, *IGNORED_KEYS)
"""The keys a 0.6-era section may hold: the four flags 0.6 read with ``dict.get``, and
``freeze_embeddings``, which its recipes carried (0.7 rejects it; `mmfreeze migrate` removes it)."""

Vocabulary = Literal["absent", "legacy", "selectors", "new"]


def is_framework_key(key: Any) -> bool:
    """A key of the framework's own vocabularies (legacy ``freeze_*`` flags, 0.7 selectors)."""
    return isinstance(key, str) and (key in SELECTOR_KEYS or key.startswith("freeze_"))


def detect_vocabulary(section: Any, *, source: str | None = None) -> Vocabulary:
    """Which engine a `freeze_config` section asks for.

    ``None`` (no section, or ``freeze_config: ~``) is absent. An empty mapping is legacy, since the
    old engine froze vision for ``{}`` and every tracked recipe was written for it. A section of
    framework keys (``freeze_*``, ``unfreeze_modules``) is ``selectors`` when it has
    ``freeze_modules`` or ``unfreeze_modules`` (nemo-automodel 0.7), else legacy; one that also
    has new keys is an error.
    """
    if section is None:
        return "absent"
    if not isinstance(section, Mapping):
        raise FreezeConfigError(
            f"must be a mapping, got {type(section).__name__} {section!r}", source=source, key=SECTION
        )
    legacy = [key for key in section if is_framework_key(key)]
    if not section or len(legacy) == len(section):
        return "selectors" if any(key in section for key in SELECTOR_KEYS) else "legacy"
    if legacy:
        new = [key for key in section if not is_framework_key(key)]
        raise FreezeConfigError(
            f"mixes legacy keys ({', '.join(map(str, legacy))}) with new keys ({', '.join(map(str, new))}); "
            "write one vocabulary (`mmfreeze migrate` converts the legacy one)",
            source=source, key=SECTION,
        )
    return "new"


def strict_problems(section: Mapping[str, Any]) -> list[str]:
    """What 0.7's ``parse_freeze_config`` rejects in ``section`` (keys and boolean values only)."""
    problems = []
    for key in section:
        if key not in FRAMEWORK_KEYS:
            problems.append(f"{SECTION}.{key}: unknown key{did_you_mean(str(key), FRAMEWORK_KEYS, cutoff=0.8)}")
    for key in BOOLEAN_KEYS:
        value = section.get(key)
        if value is not None and not isinstance(value, bool):
            problems.append(f"{SECTION}.{key}: {value!r} (not a boolean)")
    return problems


def release_06_problems(section: Mapping[str, Any]) -> list[str]:
    """The keys of ``section`` that 0.6 never read: it took the flags with ``dict.get`` and
    trained as if any other key were absent, so a misspelt flag changed nothing, silently."""
    problems = []
    for key in section:
        if key in RELEASE_06_KEYS:
            continue
        if key in SELECTOR_KEYS:
            problems.append(f"{SECTION}.{key}: module selectors came with 0.7; 0.6 ignores them")
        else:
            problems.append(f"{SECTION}.{key}: unknown key{did_you_mean(str(key), RELEASE_06_KEYS, cutoff=0.8)}")
    return problems
