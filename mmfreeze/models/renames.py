"""Checkpoint renames: how one transformers release names a model's tensors, against the checkpoint (pure).

transformers 5.x loads a checkpoint through its conversion mapping: the names a built model has are
the release's own, and the checkpoint's are what that mapping renames from. When a release moves a
module (5.24 nests the Qwen-Omni thinker's towers under ``model``: ``thinker.visual.X`` ->
``thinker.model.visual.X``), the checkpoint names stay, so they are the common ground between two
releases: stored name -> checkpoint name (the stored release's renames, reversed) -> current name
(the current release's renames).

A model's renames are kept as a few prefix rules, derived from the name pairs transformers' own
mapping gives for every parameter (:mod:`mmfreeze.models.conversion`) and checked to give back
exactly those pairs, in both directions, for every parameter of the model::

    thinker.audio_tower.* -> thinker.model.audio_tower.*
    thinker.model.* -> thinker.model.language_model.*
    thinker.visual.* -> thinker.model.visual.*

A snapshot stores them (it is read under another release, which may not have the mapping): they
are what the release that made it did, not a table of ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

ARROW = " -> "
WILDCARD = ".*"


@dataclass(frozen=True, order=True)
class RenameRule:
    """``checkpoint`` is stored as ``model``; a prefix rule renames everything below it too."""

    checkpoint: str
    model: str
    prefix: bool = True

    def line(self) -> str:
        """``thinker.visual.* -> thinker.model.visual.*`` (prefix) or ``a.w -> b.w`` (one name)."""
        star = WILDCARD if self.prefix else ""
        return f"{self.checkpoint}{star}{ARROW}{self.model}{star}"

    @classmethod
    def parse(cls, line: str) -> RenameRule:
        """The rule :meth:`line` wrote; anything else is a ``ValueError`` naming the shape."""
        checkpoint, arrow, model = line.partition(ARROW)
        prefix = checkpoint.endswith(WILDCARD)
        if not arrow or not checkpoint or not model or prefix != model.endswith(WILDCARD):
            raise ValueError(f"a rename is `checkpoint.* -> model.*` or `checkpoint.name -> model.name`, not {line!r}")
        if prefix:
            checkpoint, model = checkpoint[: -len(WILDCARD)], model[: -len(WILDCARD)]
        return cls(checkpoint=checkpoint, model=model, prefix=prefix)


def _prefixes(name: str) -> Iterable[str]:
    """``a.b.c``, ``a.b``, ``a``: longest first."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        yield ".".join(parts[:end])


@dataclass(frozen=True)
class Renames:
    """A model's rules, applied to a name (parameter or module path) either way; the longest rule wins."""

    rules: tuple[RenameRule, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(sorted(set(self.rules))))  # one value per set of rules

    @cached_property
    def _by_checkpoint(self) -> tuple[dict[str, RenameRule], dict[str, RenameRule]]:
        return _index(self.rules, side="checkpoint")

    @cached_property
    def _by_model(self) -> tuple[dict[str, RenameRule], dict[str, RenameRule]]:
        return _index(self.rules, side="model")

    def rule_from_checkpoint(self, name: str) -> RenameRule | None:
        return _find(name, *self._by_checkpoint)

    def rule_from_model(self, name: str) -> RenameRule | None:
        return _find(name, *self._by_model)

    def to_model(self, name: str) -> str:
        """The checkpoint's ``name`` as this release names it."""
        rule = self.rule_from_checkpoint(name)
        return name if rule is None else rule.model + name[len(rule.checkpoint):]

    def to_checkpoint(self, name: str) -> str:
        """This release's ``name`` as the checkpoint names it."""
        rule = self.rule_from_model(name)
        return name if rule is None else rule.checkpoint + name[len(rule.model):]

    def lines(self) -> tuple[str, ...]:
        return tuple(rule.line() for rule in self.rules)


def _index(rules: Iterable[RenameRule], *, side: str) -> tuple[dict[str, RenameRule], dict[str, RenameRule]]:
    exact = {getattr(rule, side): rule for rule in rules if not rule.prefix}
    prefix = {getattr(rule, side): rule for rule in rules if rule.prefix}
    return exact, prefix


def _find(name: str, exact: Mapping[str, RenameRule], prefix: Mapping[str, RenameRule]) -> RenameRule | None:
    if name in exact:
        return exact[name]
    return next((prefix[head] for head in _prefixes(name) if head in prefix), None)


def derive_renames(checkpoint_of: Mapping[str, str], names: Iterable[str]) -> Renames:
    """The fewest prefix rules that give exactly ``checkpoint_of`` (model name -> checkpoint name, for
    the names that differ) for every one of ``names`` (the model's parameters), both ways.

    Each pair starts as the rule for the part its two names do not share at the end
    (``thinker.visual.blocks.0.w`` / ``thinker.model.visual.blocks.0.w``: ``thinker`` ->
    ``thinker.model``); a rule that renames a name it should not, or that disagrees with another,
    takes one more shared segment, down to the whole name. A pair that even a whole-name rule cannot
    give (its checkpoint name is another parameter's own name) is left out: compared across
    releases, its name is then reported as one that cannot be mapped.
    """
    names = tuple(names)
    pairs = dict(checkpoint_of)
    shared = {model: _shared_tail(model, checkpoint) for model, checkpoint in pairs.items()}
    while True:
        sources: dict[RenameRule, list[str]] = {}
        for model, checkpoint in pairs.items():
            sources.setdefault(_rule(model, checkpoint, shared[model]), []).append(model)
        renames = Renames(tuple(sources))
        narrow = _ambiguous(sources) | _wrong(renames, pairs, names, sources)
        if not narrow:
            return renames
        for model in narrow:
            if shared[model] == 0:
                del pairs[model]
            else:
                shared[model] -= 1


def _shared_tail(model: str, checkpoint: str) -> int:
    """Trailing segments the two names share, keeping at least one segment of each in front."""
    a, b = model.split("."), checkpoint.split(".")
    count = 0
    while count < min(len(a), len(b)) - 1 and a[-1 - count] == b[-1 - count]:
        count += 1
    return count


def _rule(model: str, checkpoint: str, shared: int) -> RenameRule:
    if shared == 0:
        return RenameRule(checkpoint=checkpoint, model=model, prefix=False)
    return RenameRule(checkpoint=".".join(checkpoint.split(".")[:-shared]), model=".".join(model.split(".")[:-shared]))


def _ambiguous(sources: Mapping[RenameRule, list[str]]) -> set[str]:
    """The pairs behind rules that start from the same name on one side and lead to different ones."""
    narrow: set[str] = set()
    for side in ("checkpoint", "model"):
        seen: dict[tuple[str, bool], RenameRule] = {}
        for rule in sources:
            other = seen.setdefault((getattr(rule, side), rule.prefix), rule)
            if other != rule:
                narrow.update(sources[rule], sources[other])
    return narrow


def _wrong(
    renames: Renames, pairs: Mapping[str, str], names: Iterable[str], sources: Mapping[RenameRule, list[str]]
) -> set[str]:
    """The pairs behind every rule that renames one of ``names`` other than ``pairs`` says, either way."""
    narrow: set[str] = set()
    for name in names:
        checkpoint = pairs.get(name, name)
        if renames.to_checkpoint(name) != checkpoint:
            narrow.update(sources.get(renames.rule_from_model(name), [name]))
        if renames.to_model(checkpoint) != name:
            narrow.update(sources.get(renames.rule_from_checkpoint(checkpoint), [name]))
    return {model for model in narrow if model in pairs}
