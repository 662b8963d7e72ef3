"""What a YAML rule gets besides the text's lines: the file's one round-trip parse, where it is, and
what the rules that need the model planned."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mmfreeze.migrate.rates import RatePlan
from mmfreeze.freeze.release_renames import SelectorMove
from mmfreeze.migrate.section import SectionMigration
from mmfreeze.recipes.layout import CompiledSections


@dataclass(frozen=True, kw_only=True)
class YamlContext:
    source: str
    """The file as messages name it."""
    document: Any = None
    """The original text's round-trip parse: every rule finds its places (line, column) in it."""
    migration: SectionMigration | None = None
    """The new `freeze_config` for this recipe; ``None`` when it has no legacy section."""
    moves: tuple[SelectorMove, ...] = ()
    """Its selectors that move onto the installed release's module paths (MF004)."""
    rates: RatePlan | None = None
    """Its `param_group_overrides` patterns rewritten as selectors, and those kept (MF005)."""
    compiled: CompiledSections | None = None
    """What its source compiles to for the repository's release (MF006); ``None``: nothing to compile."""
