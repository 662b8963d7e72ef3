"""What a YAML rule plans on and edits with: the file's data and its one round-trip parse, its
recipe and model (found on first use), and what the rules before it planned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmfreeze.freeze.recipe_model import recipe_trained_model
from mmfreeze.freeze.release_renames import SelectorMove, apply_moves
from mmfreeze.memo import memoized
from mmfreeze.migrate.rates import RatePlan
from mmfreeze.migrate.section import Mode, SectionMigration
from mmfreeze.recipes.layout import CompiledSections
from mmfreeze.recipes.recipe import Recipe
from mmfreeze.workspace import Workspace

if TYPE_CHECKING:
    from mmfreeze.freeze.targets import FreezeTargets
    from mmfreeze.models.structure import ModelStructure


@dataclass(frozen=True)
class SectionPlan:
    """What the rules that need the model planned: MF004's selector moves, MF001's new section (and
    the trained model it planned on), MF005's rate selectors and MF006's compiled sections."""

    moves: tuple[SelectorMove, ...] = ()
    migration: SectionMigration | None = None
    targets: FreezeTargets | None = None
    rates: RatePlan | None = None
    kept: str | None = None
    """Why a valid `freeze_config` stays in the framework's vocabulary (MF001 writes nothing)."""
    compiled: CompiledSections | None = None
    """MF006's compiled sections, when the file does not hold them yet."""
    not_compiled: str | None = None
    """Why MF006 compiles nothing: the release cannot state the source (it keeps the integration)."""

    @property
    def patterns(self) -> tuple[SelectorMove, ...]:
        """MF004's moves of LoRA patterns: the adapters they place decide which modules the section finds."""
        return tuple(move for move in self.moves if move.section == "peft")


@dataclass(kw_only=True)
class Planning:
    """One file as its rules plan on it: its data, where its `freeze_config` is, the mode, and its
    recipe and built model from the run's workspace, asked for only by a rule that needs them."""

    path: Path
    document: Mapping[str, Any]
    where: str
    """``file:line`` of the `freeze_config` key, for messages about the section."""
    mode: Mode
    workspace: Workspace
    _trained: dict[tuple[SelectorMove, ...], FreezeTargets] = field(default_factory=dict, repr=False)

    @cached_property
    def recipe(self) -> Recipe:
        return self.workspace.recipe(self.path)

    @cached_property
    def built(self) -> ModelStructure:
        return self.workspace.structure(self.workspace.request(self.recipe, probed=False))

    def adapted(self, patterns: Sequence[SelectorMove]) -> Recipe:
        """The recipe with MF004's LoRA pattern moves."""
        return replace(self.recipe, document=apply_moves(self.document, patterns)) if patterns else self.recipe

    def trained(self, patterns: Sequence[SelectorMove]) -> FreezeTargets:
        """The recipe's model as its `freeze_config` finds it, LoRA placed by the moved patterns:
        computed once for MF004's selector moves and MF001's section."""
        key = tuple(patterns)
        return memoized(self._trained, key, lambda: recipe_trained_model(self.adapted(key), self.built))


@dataclass(frozen=True, kw_only=True)
class YamlContext:
    """What a rule edits with."""

    source: str
    """The file as messages name it."""
    document: Any = None
    """The original text's round-trip parse: every rule finds its places (line, column) in it."""
    plan: SectionPlan = SectionPlan()
