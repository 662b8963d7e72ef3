"""The central per-architecture table, keyed by transformers class name (strings: nothing from
transformers is imported). Each family file documents its contested-role decisions."""

from __future__ import annotations

from collections.abc import Mapping

from mmfreeze.resolver import table_audio, table_framework, table_llava, table_other, table_qwen, table_text
from mmfreeze.resolver.entry import ArchitectureEntry

_FAMILIES = (
    table_llava.TABLE, table_qwen.TABLE, table_audio.TABLE, table_other.TABLE, table_text.TABLE, table_framework.TABLE,
)


def _merge(families) -> dict[str, ArchitectureEntry]:
    merged: dict[str, ArchitectureEntry] = {}
    for family in families:
        clash = merged.keys() & family.keys()
        if clash:
            raise RuntimeError(f"architecture table lists {sorted(clash)} twice")
        merged.update(family)
    return merged


# NeMo AutoModel's classes that share a transformers name get their own paths as later alternatives.
ARCHITECTURE_TABLE: Mapping[str, ArchitectureEntry] = table_framework.with_framework_paths(_merge(_FAMILIES))
