"""What a YAML rule gets besides the text: where it is, and (for MF001) the planned section."""

from __future__ import annotations

from dataclasses import dataclass

from mmfreeze.migrate.release_renames import SelectorMove
from mmfreeze.migrate.section import SectionMigration


@dataclass(frozen=True, kw_only=True)
class YamlContext:
    source: str
    """The file as messages name it."""
    migration: SectionMigration | None = None
    """The new `freeze_config` for this recipe; ``None`` when it has no legacy section."""
    moves: tuple[SelectorMove, ...] = ()
    """Its selectors that move onto the installed release's module paths (MF004)."""
