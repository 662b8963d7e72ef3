"""What changed between a stored snapshot and the current one: set algebra on names, deepdiff on the header.

Pure: report dataclasses in, report dataclasses out. Names are compared with plain sets (deepdiff
on 1e5 strings takes seconds and its ``pretty()`` drops the container of set items); deepdiff
compares the header, where a field-by-field account is what a reviewer wants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

from mmfreeze.models.lora import ADAPTER_MARK
from mmfreeze.resolver.labels import ModuleGroup, group_names
from mmfreeze.snapshots.format import Snapshot


@dataclass(frozen=True, kw_only=True)
class HeaderChange:
    field: str
    old: object
    new: object


RELEASE_FIELDS = frozenset({"transformers", "framework"})
"""Header fields that name a release, not a behaviour: the transformers release that built the
module tree and the framework release whose rules applied."""


@dataclass(frozen=True, kw_only=True)
class RecipeChange:
    """The behaviour change of one recipe: what is frozen now that was not, and the reverse; which
    LoRA adapters it adds now that it did not, and the reverse."""

    recipe: str
    header_changes: tuple[HeaderChange, ...]
    newly_frozen: tuple[ModuleGroup, ...]
    newly_trainable: tuple[ModuleGroup, ...]
    """Stored as frozen, not frozen any more (trainable now, or gone from the model; a removed
    adapter is in ``adapters_removed`` only)."""
    adapters_added: tuple[ModuleGroup, ...] = ()
    """Adapter tensors the recipe has now and its snapshot has not, grouped by the module they adapt."""
    adapters_removed: tuple[ModuleGroup, ...] = ()
    """Adapter tensors its snapshot has and the recipe has not any more (so they count 0 parameters)."""

    @property
    def version_only(self) -> bool:
        """The header names another release (:data:`RELEASE_FIELDS`) and nothing else moved: no
        frozen name, no adapter, no other header field."""
        moved = self.newly_frozen or self.newly_trainable or self.adapters_added or self.adapters_removed
        fields = {change.field for change in self.header_changes}
        return bool(fields) and fields <= RELEASE_FIELDS and not moved


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


def adapted_weight(name: str) -> str:
    """The weight an adapter tensor adapts, ``x.q_proj.lora_A.weight`` -> ``x.q_proj.weight``: a
    removed adapter is not in the current model, the weight it adapted is, and labels like it."""
    module, mark, _ = name.partition(f".{ADAPTER_MARK}")
    return f"{module}.weight" if mark else name


def diff_snapshots(
    old: Snapshot, new: Snapshot, *, numel_of: Mapping[str, int], group_of: Callable[[str], str]
) -> RecipeChange:
    def adapter_group(name: str) -> str:
        return group_of(adapted_weight(name))

    removed = old.adapters - new.adapters
    return RecipeChange(
        recipe=new.header.recipe,
        header_changes=header_changes(old, new),
        newly_frozen=group_names(new.frozen - old.frozen, numel_of=numel_of, group_of=group_of),
        # A frozen adapter that was removed is gone, not trainable: it is listed once, as removed.
        newly_trainable=group_names(old.frozen - new.frozen - removed, numel_of=numel_of, group_of=group_of),
        adapters_added=group_names(new.adapters - old.adapters, numel_of=numel_of, group_of=adapter_group),
        adapters_removed=group_names(removed, numel_of=numel_of, group_of=adapter_group),
    )
