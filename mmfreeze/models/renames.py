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

A rule whose two sides carry the same layer indices is written once for every layer, with ``#``
for the index (``model.language_model.layers.#.post_attention_layernorm.* ->
model.layers.#.post_attn_norm.*``). A snapshot stores them (it is read under another release, which
may not have the mapping): they are what the release that made it did, not a table of ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mmfreeze.memo import memoized

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


INDEX = "#"
"""A rule segment that stands for any layer index, the same on both sides:
``model.language_model.layers.#.post_attention_layernorm.* -> model.layers.#.post_attn_norm.*``."""


def _shaped(parts: Sequence[str]) -> list[str]:
    """The segments of ``a.3.b`` -> those of ``a.#.b``."""
    return [INDEX if part.isdigit() else part for part in parts]


def _indexed(rule: RenameRule) -> RenameRule:
    """``rule`` with its layer indices as :data:`INDEX` when both sides carry the same ones in the same order."""
    checkpoint, model = rule.checkpoint.split("."), rule.model.split(".")
    numbers = [part for part in checkpoint if part.isdigit()]
    if not numbers or numbers != [part for part in model if part.isdigit()]:
        return rule
    return RenameRule(checkpoint=".".join(_shaped(checkpoint)), model=".".join(_shaped(model)), prefix=rule.prefix)


@dataclass(frozen=True)
class Renames:
    """A model's rules, applied to a name (parameter or module path) either way; the longest rule
    wins, a rule naming the indices before one with :data:`INDEX`."""

    rules: tuple[RenameRule, ...] = ()
    source: str = ""
    """What gave them: ``transformers 5.24.0 conversion mapping``, ``nemo-automodel 0.7.0
    Qwen3VLMoeStateDictAdapter`` (shown beside every rename a report lists)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(sorted(set(self.rules))))  # one value per set of rules

    @cached_property
    def _by_checkpoint(self) -> _Side:
        return _Side.of(self.rules, side="checkpoint")

    @cached_property
    def _by_model(self) -> _Side:
        return _Side.of(self.rules, side="model")

    def rule_from_checkpoint(self, name: str) -> RenameRule | None:
        return _find(name, self._by_checkpoint)[0]

    def rule_from_model(self, name: str) -> RenameRule | None:
        return _find(name, self._by_model)[0]

    def to_model(self, name: str) -> str:
        """The checkpoint's ``name`` as this release names it."""
        return _rename(name, self._by_checkpoint, to="model")

    def to_checkpoint(self, name: str) -> str:
        """This release's ``name`` as the checkpoint names it."""
        return _rename(name, self._by_model, to="checkpoint")

    def lines(self) -> tuple[str, ...]:
        return tuple(rule.line() for rule in self.rules)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "rules": list(self.lines())}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Renames:
        return cls(tuple(RenameRule.parse(line) for line in data["rules"]), data["source"])


@dataclass(frozen=True)
class _Side:
    """One side's rules by the name they start from."""

    exact: Mapping[str, RenameRule]
    prefix: Mapping[str, RenameRule]
    depth: int
    """The most segments a prefix rule's side has: a name's longer heads match no prefix rule."""
    found: dict[str, tuple[RenameRule | None, int]] = field(default_factory=dict, compare=False, repr=False)
    """:func:`_find`'s answer per name: a diff across releases asks for every name several times."""

    @classmethod
    def of(cls, rules: Iterable[RenameRule], *, side: str) -> _Side:
        prefix = {getattr(rule, side): rule for rule in rules if rule.prefix}
        return cls(exact={getattr(rule, side): rule for rule in rules if not rule.prefix}, prefix=prefix,
                   depth=max((key.count(".") + 1 for key in prefix), default=0))


def _find(name: str, side: _Side) -> tuple[RenameRule | None, int]:
    """The rule for ``name`` and how many of its segments the rule's side covers."""
    return memoized(side.found, name, lambda: _search(name, side))


def _search(name: str, side: _Side) -> tuple[RenameRule | None, int]:
    parts = name.split(".")
    shaped = _shaped(parts)
    # The whole name (exact or prefix rules), then its heads no longer than the longest prefix rule.
    for end in (len(parts), *range(min(len(parts) - 1, side.depth), 0, -1)):
        for key in (".".join(parts[:end]), ".".join(shaped[:end])):
            if end == len(parts) and key in side.exact:
                return side.exact[key], end
            if key in side.prefix:
                return side.prefix[key], end
    return None, 0


def _rename(name: str, side: _Side, *, to: str) -> str:
    rule, end = _find(name, side)
    if rule is None:
        return name
    parts = name.split(".")
    numbers = iter(part for part in parts[:end] if part.isdigit())
    head = [next(numbers) if part == INDEX else part for part in getattr(rule, to).split(".")]
    return ".".join([*head, *parts[end:]])


def derive_renames(checkpoint_of: Mapping[str, str], names: Iterable[str], source: str) -> Renames:
    """The fewest prefix rules that give exactly ``checkpoint_of`` (model name -> checkpoint name, for
    the names that differ) for every one of ``names`` (the model's parameters), both ways.

    Each pair starts as the rule for the part its two names do not share at the end
    (``thinker.visual.blocks.0.w`` / ``thinker.model.visual.blocks.0.w``: ``thinker`` ->
    ``thinker.model``), its layer indices as :data:`INDEX`. A rule that disagrees with another from
    the same shape names its indices; a rule that renames a name it should not takes one more
    shared segment, down to the whole name. A pair that even a whole-name rule cannot give (its checkpoint
    name is another parameter's own name) is left out: compared across releases, its name is then
    reported as one that cannot be mapped.
    """
    names = tuple(names)
    pairs = dict(checkpoint_of)
    shared = {model: _shared_tail(model, checkpoint) for model, checkpoint in pairs.items()}
    literal: set[str] = set()
    while True:
        sources: dict[RenameRule, list[str]] = {}
        for model, checkpoint in pairs.items():
            rule = _rule(model, checkpoint, shared[model])
            sources.setdefault(rule if model in literal else _indexed(rule), []).append(model)
        renames = Renames(tuple(sources), source)
        ambiguous = _ambiguous(sources)
        wrong = _wrong(renames, pairs, names, sources) - ambiguous
        if not ambiguous and not wrong:
            return renames
        # Two rules from one shape disagree on the index: name it. A rule renames too much: narrow it,
        # naming its indices once it covers the whole name. Each pair's step reads that pair alone.
        for model in ambiguous | wrong:
            if model not in literal and (model in ambiguous or shared[model] == 0):
                literal.add(model)
            else:
                _narrow(model, pairs, shared)


def _narrow(model: str, pairs: dict[str, str], shared: dict[str, int]) -> None:
    """One more shared segment in ``model``'s rule; at the whole name, give the pair up."""
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
