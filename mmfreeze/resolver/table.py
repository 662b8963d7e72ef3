"""The central per-architecture table, keyed by transformers class name (strings: nothing from
transformers is imported). Each family file documents its contested-role decisions."""

from __future__ import annotations

from collections.abc import Mapping

from mmfreeze.resolver import table_audio, table_llava, table_other, table_qwen, table_text
from mmfreeze.resolver.entry import ArchitectureEntry

_FAMILIES = (table_llava.TABLE, table_qwen.TABLE, table_audio.TABLE, table_other.TABLE, table_text.TABLE)


def _merge(families) -> dict[str, ArchitectureEntry]:
    merged: dict[str, ArchitectureEntry] = {}
    for family in families:
        clash = merged.keys() & family.keys()
        if clash:
            raise RuntimeError(f"architecture table lists {sorted(clash)} twice")
        merged.update(family)
    return merged


ARCHITECTURE_TABLE: Mapping[str, ArchitectureEntry] = _merge(_FAMILIES)
