"""What changed between a stored snapshot and the current one: set algebra on names, deepdiff on the header.

Pure: report dataclasses in, report dataclasses out. Names are compared with plain sets (deepdiff
on 1e5 strings takes seconds and its ``pretty()`` drops the container of set items); deepdiff
compares the header, where a field-by-field account is what a reviewer wants.

The stored names are first mapped onto the current model's through the checkpoint renames both
snapshots record (:class:`ReleaseNames`): a snapshot made under transformers 5.18 names the Qwen-Omni
vision tower ``thinker.visual``, one made under 5.24 ``thinker.model.visual``, and both releases load
the same checkpoint names. A tensor whose trainability is the same under its new name is renamed,
not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace

from mmfreeze.recipes.optimizer import DEFAULT_RATE, Rate
from mmfreeze.models.lora import adapted_weight
from mmfreeze.models.renames import RenameRule, Renames
from mmfreeze.resolver.labels import ModuleGroup, group_names
from mmfreeze.snapshots.format import Snapshot


@dataclass(frozen=True, kw_only=True)
class HeaderChange:
    field: str
    old: object
    new: object


RELEASE_FIELDS = frozenset({"transformers", "framework", "builder", "divergence"})
"""Header fields that name what made the snapshot, not a behaviour: the transformers release that
built the module tree, the framework release whose rules applied, and which library built the
model (the framework's own class or transformers'). With the same names frozen, the same adapters
and the same counts, the recipe trains the same tensors whatever they name."""


@dataclass(frozen=True, kw_only=True)
class RenameGroup:
    """Tensors stored under ``stored`` and named ``current`` now, and the mapping that says so."""

    stored: str
    current: str
    tensors: int
    mapping: str
    """``transformers 5.24.0 conversion mapping recorded in the snapshot, reversed``, ..."""

    def describe(self) -> str:
        return f"{self.stored} -> {self.current}: {self.tensors:,} tensors ({self.mapping})"


@dataclass(frozen=True)
class ReleaseNames:
    """Stored names <-> current names, through the checkpoint names both releases load."""

    stored: Renames
    current: Renames

    def to_current(self, name: str) -> str:
        return _translated(name, self.stored, self.current)

    def to_stored(self, name: str) -> str:
        return _translated(name, self.current, self.stored)

    def renamed(self, current_names: Iterable[str]) -> tuple[RenameGroup, ...]:
        """The current names whose stored name differs, grouped by the rules that moved them."""
        groups: dict[tuple[RenameRule | None, RenameRule | None], int] = {}
        for name in current_names:
            if self.to_stored(name) != name:
                checkpoint = self.current.to_checkpoint(name)
                key = (self.stored.rule_from_checkpoint(checkpoint), self.current.rule_from_model(name))
                groups[key] = groups.get(key, 0) + 1
        return tuple(sorted((self._group(*rules, count) for rules, count in groups.items()),
                            key=lambda group: group.stored))

    def _group(self, stored: RenameRule | None, current: RenameRule | None, tensors: int) -> RenameGroup:
        mappings = []
        if stored is not None:
            mappings.append(f"{self.stored.source} recorded in the snapshot, reversed")
        if current is not None:
            mappings.append(self.current.source)
        # A name renamed by one release only is the checkpoint's name on the other side.
        if stored is None or current is None:
            rule = stored or current
            assert rule is not None, "a renamed tensor has a rule on at least one side"
            ends = (_pattern(rule, "model"), _pattern(rule, "checkpoint"))
            old, new = ends if stored is not None else ends[::-1]
        else:
            old, new = _pattern(stored, "model"), _pattern(current, "model")
        return RenameGroup(stored=old, current=new, tensors=tensors, mapping=" then ".join(mappings))


def _translated(name: str, own: Renames, other: Renames) -> str:
    """The name the release of ``other`` gives the tensor the release of ``own`` names ``name``: the
    same when its renames make that name, or neither release renames it; else through the checkpoint.

    The same name is asked for first, because a release's renames reversed give one of the
    checkpoint names it loads, not the only one: 5.18 saves Qwen2-Audio's language model as
    ``language_model.model.model.*``, 5.24 as ``language_model.model.*``, and both load either as
    ``model.language_model.*``.
    """
    if other.rule_from_model(name) is not None:
        return name
    if own.rule_from_model(name) is None and other.rule_from_checkpoint(name) is None:
        return name
    return other.to_model(own.to_checkpoint(name))


def _pattern(rule: RenameRule, side: str) -> str:
    """One side of a rule as a reviewer reads it: ``thinker.visual.*``, or a whole name."""
    return getattr(rule, side) + (".*" if rule.prefix else "")


@dataclass(frozen=True, kw_only=True)
class RateChange:
    """Tensors trainable before and now whose ``(lr_mult, wd_mult)`` went from ``old`` to ``new``."""

    old: Rate
    new: Rate
    groups: tuple[ModuleGroup, ...]

    def describe(self) -> str:
        return f"lr_mult {self.old[0]:g}, wd_mult {self.old[1]:g} -> lr_mult {self.new[0]:g}, wd_mult {self.new[1]:g}"


@dataclass(frozen=True, kw_only=True)
class ReachChange:
    """One data mix, in both snapshots, whose trainable tensors the loss never reaches changed."""

    mix: str
    newly_unreachable: tuple[ModuleGroup, ...] = ()
    """Trainable tensors no path from the loss reaches now, that one did (or that were not trainable)."""
    newly_reached: tuple[ModuleGroup, ...] = ()
    """Stored as unreachable, trainable and reached now (one frozen or removed since is reported as such)."""
    probe: str = ""
    """``<old> -> <new>`` when the method (or whether the mix was probed at all) changed."""
    why: str = ""
    """Why the mix is not probed now, when it was before (the current snapshot's reason)."""

    @property
    def method_only(self) -> bool:
        """Only how the mix was probed changed: no tensor became unreachable or reached."""
        return bool(self.probe) and not (self.newly_unreachable or self.newly_reached)


@dataclass(frozen=True, kw_only=True)
class RecipeChange:
    """The behaviour change of one recipe: what is frozen now that was not, and the reverse; which
    LoRA adapters it adds now that it did not, and the reverse."""

    recipe: str
    header_changes: tuple[HeaderChange, ...]
    newly_frozen: tuple[ModuleGroup, ...]
    newly_trainable: tuple[ModuleGroup, ...]
    """Stored as frozen, trainable now."""
    adapters_added: tuple[ModuleGroup, ...] = ()
    """Adapter tensors the recipe has now and its snapshot has not, grouped by the module they adapt."""
    adapters_removed: tuple[ModuleGroup, ...] = ()
    """Adapter tensors its snapshot has and the recipe has not any more (so they count 0 parameters)."""
    unmapped: tuple[ModuleGroup, ...] = ()
    """Stored frozen names that name no tensor of the current model, directly or through a rename
    (a removed layer, or a move neither release's mapping knows); they count 0 parameters."""
    rate_changes: tuple[RateChange, ...] = ()
    """Tensors trainable in both whose optimizer multipliers changed, by old and new rate."""
    reach_changes: tuple[ReachChange, ...] = ()
    """Per data mix in both snapshots, the trainable tensors that became unreachable or reached."""
    renamed: tuple[RenameGroup, ...] = ()
    """The current model's tensors whose stored name differs, by the mapping that renamed them."""
    stored_names: Mapping[str, str] = field(default_factory=dict)
    """Current name -> stored name, for the renamed tensors among the changes above (shown beside them)."""

    @property
    def moved(self) -> bool:
        """Whether any stored name's trainability, or any adapter, differs (after renames)."""
        return bool(self.newly_frozen or self.newly_trainable or self.adapters_added or self.adapters_removed
                    or self.unmapped or self.rate_changes or self.reach_changes)

    @property
    def nothing_moved(self) -> bool:
        """The two snapshots say the same: no header field, name, adapter, rate, reach or rename
        differs (the stored file differs in order or layout alone)."""
        return not (self.header_changes or self.moved or self.renamed)

    @property
    def version_only(self) -> bool:
        """The header names another release (:data:`RELEASE_FIELDS`) and nothing else moved: no
        frozen name, no adapter, no other header field, and no name renamed."""
        return self._release_only and not self.renamed

    @property
    def probe_only(self) -> bool:
        """Like :attr:`version_only` or :attr:`renamed_only`, but the release also changed how some
        mix was probed for reachability (another method, or none): no tensor's trainability, rate or
        reachability moved."""
        # Those probe changes set aside, the rest is a release difference alone (renamed or not).
        return (bool(self.reach_changes) and all(change.method_only for change in self.reach_changes)
                and replace(self, reach_changes=())._release_only)

    @property
    def renamed_only(self) -> bool:
        """Like :attr:`version_only`, but some tensors have another name now, each as trainable as before."""
        return self._release_only and bool(self.renamed)

    @property
    def _release_only(self) -> bool:
        fields = {change.field for change in self.header_changes}
        return bool(fields) and fields <= RELEASE_FIELDS and not self.moved


def header_changes(old: Snapshot, new: Snapshot) -> tuple[HeaderChange, ...]:
    # Imported here: it takes 0.2 s, a fifth of a warm check that finds nothing changed.
    from deepdiff import DeepDiff

    diff = DeepDiff(asdict(old.header), asdict(new.header), view="tree")
    levels = [level for kind in ("values_changed", "type_changes") for level in diff.get(kind, [])]
    return tuple(
        sorted(
            (HeaderChange(field=str(level.path(output_format="list")[0]), old=level.t1, new=level.t2) for level in levels),
            key=lambda change: change.field,
        )
    )


def diff_snapshots(
    old: Snapshot, new: Snapshot, *, numel_of: Mapping[str, int], group_of: Callable[[str], str]
) -> RecipeChange:
    names = ReleaseNames(old.renames, new.renames)
    old_adapters = {names.to_current(name) for name in old.adapters}
    removed = old_adapters - new.adapters
    current_of = {name: names.to_current(name) for name in old.frozen}
    gone = {stored for stored, name in current_of.items()
            if name not in numel_of and name not in new.frozen and name not in removed}
    old_frozen = {name for stored, name in current_of.items() if stored not in gone}
    newly_frozen = new.frozen - old_frozen
    newly_trainable = old_frozen - new.frozen - removed

    def adapter_group(name: str) -> str:
        return group_of(adapted_weight(name))

    moved = newly_frozen | newly_trainable | removed | (new.adapters - old_adapters)
    return RecipeChange(
        recipe=new.header.recipe,
        header_changes=header_changes(old, new),
        newly_frozen=group_names(newly_frozen, numel_of=numel_of, group_of=group_of),
        newly_trainable=group_names(newly_trainable, numel_of=numel_of, group_of=group_of),
        adapters_added=group_names(new.adapters - old_adapters, numel_of=numel_of, group_of=adapter_group),
        adapters_removed=group_names(removed, numel_of=numel_of, group_of=adapter_group),
        unmapped=group_names(gone, numel_of=numel_of, group_of=group_of),
        rate_changes=_rate_changes(old, new, names, old_frozen, numel_of=numel_of, group_of=group_of),
        reach_changes=_reach_changes(old, new, names, numel_of=numel_of, group_of=group_of),
        renamed=names.renamed(numel_of),
        stored_names={name: stored for name in moved if (stored := names.to_stored(name)) != name},
    )


def _rate_changes(
    old: Snapshot, new: Snapshot, names: ReleaseNames, old_frozen: Collection[str], *,
    numel_of: Mapping[str, int], group_of: Callable[[str], str],
) -> tuple[RateChange, ...]:
    """Rate changes of the tensors trainable in both snapshots (a newly trainable tensor is reported
    as such, whatever its rate)."""
    old_rate = {names.to_current(name): rate for name, rate in old.rate_of.items()}
    moved: dict[tuple[Rate, Rate], set[str]] = {}
    for name in set(old_rate) | set(new.rate_of):
        if name in new.frozen or name in old_frozen or name not in numel_of:
            continue
        before, after = old_rate.get(name, DEFAULT_RATE), new.rate_of.get(name, DEFAULT_RATE)
        if before != after:
            moved.setdefault((before, after), set()).add(name)
    return tuple(RateChange(old=before, new=after, groups=group_names(found, numel_of=numel_of, group_of=group_of))
                 for (before, after), found in sorted(moved.items()))


def _reach_changes(
    old: Snapshot, new: Snapshot, names: ReleaseNames, *, numel_of: Mapping[str, int], group_of: Callable[[str], str],
) -> tuple[ReachChange, ...]:
    """Per mix both snapshots list: what became unreachable, what is reached now, and a changed
    method (a mix added or dropped shows as the header's ``mixes``)."""
    before = {reach.mix: reach for reach in old.reach}
    changes = []
    for reach in new.reach:
        stored = before.get(reach.mix)
        if stored is None:
            continue
        probe = "" if stored.method == reach.method else f"{stored.method or 'not probed'} -> {reach.method or 'not probed'}"
        if not (stored.method and reach.method):  # one side has no answer: nothing is newly (un)reached, it is unknown
            if probe:
                changes.append(ReachChange(mix=reach.mix, probe=probe, why="" if reach.method else reach.not_probed))
            continue
        was = {names.to_current(name) for name in old.unreachable[reach.mix]}
        now = new.unreachable[reach.mix]
        still_trainable = {name for name in was - now if name in numel_of and name not in new.frozen}
        if now - was or still_trainable or probe:
            changes.append(ReachChange(
                mix=reach.mix, probe=probe,
                newly_unreachable=group_names(now - was, numel_of=numel_of, group_of=group_of),
                newly_reached=group_names(still_trainable, numel_of=numel_of, group_of=group_of)))
    return tuple(changes)
