"""Frozen sets on disk, so a warm check reads neither model structures nor runs the resolver.

A recipe's frozen set is a function of three things: its model structure (named by the structure
key), the recipe sections the engine reads, and mmfreeze's own code (resolver table, both
freezing engines, LoRA injection). The key covers all three, the code through a hash of the
package source: a stale entry would hide exactly the change a snapshot exists to catch, such as
a table edit that moves a parameter to another role.

A computation that fails for a reason the key determines (transformers cannot build the config, a
section does not validate) is stored under the same key as a :class:`FailedComputation`, so a warm
run reports it again without rebuilding the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from mmfreeze import exceptions
from mmfreeze.disk_cache import DiskCache
from mmfreeze.models.renames import Renames
from mmfreeze.reachability.mix import mix_material
from mmfreeze.recipes.optimizer import grouping_material
from mmfreeze.recipes.recipe import TRAINABILITY_SECTIONS
from mmfreeze.snapshots.format import GroupLines, RateLines, ReachLines, Snapshot, SnapshotHeader, body_lines
from mmfreeze.versions import installed_version

if TYPE_CHECKING:  # a warm run reads records only: the engine (and the resolver tables) stay unimported
    from mmfreeze.freeze.engine import FrozenSetResult
    from mmfreeze.reachability.recipe import RecipeReach

RECORD_FORMAT_VERSION = 9
"""5 added ``adapter_lines``, 7 ``renames``, 8 ``rates``, 9 ``mixes`` and ``reach``: an older record,
without them, is a miss."""


@dataclass(frozen=True, kw_only=True)
class FrozenSetRecord:
    """What a snapshot takes from one frozen-set computation: all of it but the recipe's own
    path and model id, which recipes sharing the computation do not share."""

    architecture: str
    framework: str
    transformers: str
    lines: tuple[str, ...]
    """The frozen names in the snapshot's stored form (range-compressed: an MoE model's names
    shrink a hundredfold), so a cached set is rendered without compressing it again."""
    adapter_lines: tuple[str, ...] | None = None
    """The LoRA adapter names in the same stored form when the recipe has `peft:` (``None`` without it)."""
    frozen_tensors: int
    frozen_parameters: int
    trainable_tensors: int
    trainable_parameters: int
    build_note: str = ""
    """Why the transformers class stands in for the framework's (a fallback), from the structure."""
    built_by: str = ""
    """The framework's label when its class stood in for a missing transformers one, from the structure."""
    renames: Renames = Renames()
    """The structure's checkpoint renames (the snapshot stores them)."""
    rates: tuple[RateLines, ...] = ()
    """The trainable tensors at another rate than 1/1, in stored form."""
    mixes: str = ""
    """The recipe's data mixes and who says so (the header's ``mixes``)."""
    reach: tuple[ReachLines, ...] = ()
    """Per mix, the trainable tensors the loss never reaches, in stored form."""

    @classmethod
    def of(cls, result: FrozenSetResult, *, recipe: str, reach: RecipeReach | None = None) -> FrozenSetRecord:
        """``reach``: what the recipe trains and never reaches (:func:`mmfreeze.reachability.recipe.recipe_reach`);
        without it the record, and its snapshot, say nothing of reachability (a caller comparing frozen sets only)."""
        structure = result.structure
        frozen_numel = result.frozen_numel
        return cls(
            architecture=structure.class_name,
            framework=result.rules.describe(),
            transformers=installed_version("transformers"),
            lines=body_lines(result.frozen, recipe=recipe),
            adapter_lines=None if result.adapters is None else body_lines(result.adapters, recipe=recipe),
            frozen_tensors=len(result.frozen),
            frozen_parameters=frozen_numel,
            trainable_tensors=len(structure.parameters) - len(result.frozen),
            trainable_parameters=structure.total_numel - frozen_numel,
            build_note=structure.build_note,
            built_by=structure.built_by,
            renames=structure.checkpoint_renames,
            rates=tuple(RateLines(lr_mult=lr, wd_mult=wd, lines=body_lines(names, recipe=recipe))
                        for (lr, wd), names in sorted(result.rates.items())),
            mixes="" if reach is None else reach.mixes.describe(),
            reach=() if reach is None else tuple(ReachLines(mix=mix.mix, method=mix.method, not_probed=mix.not_probed, groups=tuple(
                GroupLines(label=group.label, tensors=group.tensors, lines=body_lines(frozenset(group.names), recipe=recipe))
                for group in mix.groups)) for mix in reach.results),
        )

    def snapshot(
        self, *, recipe: str, model_id: str, config: str, builder: str = "transformers", divergence: str = ""
    ) -> Snapshot:
        """The snapshot of one recipe sharing this computation (``config``: where its model
        config came from, see :func:`mmfreeze.snapshots.format.describe_config_source`;
        ``builder`` and ``divergence``: see :class:`~mmfreeze.snapshots.format.SnapshotHeader`)."""
        header = SnapshotHeader(
            recipe=recipe,
            model_id=model_id,
            config=config,
            architecture=self.architecture,
            builder=builder,
            divergence=divergence,
            framework=self.framework,
            transformers=self.transformers,
            frozen_tensors=self.frozen_tensors,
            trainable_tensors=self.trainable_tensors,
            frozen_parameters=self.frozen_parameters,
            trainable_parameters=self.trainable_parameters,
            mixes=self.mixes,
        )
        return Snapshot(header=header, lines=self.lines, adapter_lines=self.adapter_lines, rates=self.rates,
                        renames=self.renames, reach=self.reach)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "renames": self.renames.to_json(), "format": RECORD_FORMAT_VERSION}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FrozenSetRecord:
        if data.get("format") != RECORD_FORMAT_VERSION:
            raise ValueError(f"frozen-set record format {data.get('format')!r} is not {RECORD_FORMAT_VERSION}")
        fields = {name: value for name, value in data.items() if name != "format"}
        adapters = data["adapter_lines"]
        return cls(**{**fields, "lines": tuple(data["lines"]), "adapter_lines": None if adapters is None else tuple(adapters),
                      "renames": Renames.from_json(data["renames"]),
                      "rates": tuple(RateLines(lr_mult=rate["lr_mult"], wd_mult=rate["wd_mult"], lines=tuple(rate["lines"]))
                                     for rate in data["rates"]),
                      "reach": tuple(ReachLines(mix=reach["mix"], method=reach["method"], not_probed=reach["not_probed"],
                                                groups=tuple(GroupLines(label=group["label"], tensors=group["tensors"],
                                                                        lines=tuple(group["lines"]))
                                                             for group in reach["groups"]))
                                     for reach in data["reach"])})


@dataclass(frozen=True, kw_only=True)
class FailedComputation:
    """A deterministic failure of one frozen-set computation: the error, without its recipe."""

    error_type: str
    """The :mod:`mmfreeze.exceptions` class name."""
    message: str
    key: str | None = None

    @classmethod
    def of(cls, error: exceptions.MmfreezeError) -> FailedComputation:
        return cls(error_type=type(error).__name__, message=error.message, key=error.key)

    def error(self, *, recipe: str) -> exceptions.MmfreezeError:
        """The error again, restated for ``recipe`` (recipes sharing a computation share it)."""
        error_type = getattr(exceptions, self.error_type, exceptions.MmfreezeError)
        return error_type(self.message, source=recipe, key=self.key)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "failed": True, "format": RECORD_FORMAT_VERSION}


CachedComputation = FrozenSetRecord | FailedComputation


def frozen_set_key(
    structure_key: str, document: Mapping[str, Any], code_fingerprint: str, release: str, compiled: Any = None,
) -> str:
    """Everything a recipe's frozen set depends on: its model structure, the sections the engine
    reads, the code that reads them, and the framework release whose rules apply; and its
    optimizer's grouping, whose silent cases fail the computation; and what says which data mixes
    its batches carry (reachability is reported per mix); and the sections compiled from the
    source, which the computation holds to it."""
    sections = {name: document.get(name) for name in TRAINABILITY_SECTIONS}
    material = json.dumps([structure_key, code_fingerprint, sections, grouping_material(document),
                           mix_material(document), release, compiled], sort_keys=True, default=str)
    return hashlib.sha256(material.encode()).hexdigest()


class FrozenSetCache(DiskCache[CachedComputation]):
    """Frozen-set records, or the deterministic failure, by :func:`frozen_set_key`."""

    kind = "frozen_sets"

    def encode(self, value: CachedComputation) -> Any:
        return value.to_json()

    def decode(self, data: Any) -> CachedComputation:
        if data.get("failed"):
            if data.get("format") != RECORD_FORMAT_VERSION:
                raise ValueError(f"failure record format {data.get('format')!r} is not {RECORD_FORMAT_VERSION}")
            return FailedComputation(error_type=data["error_type"], message=data["message"], key=data["key"])
        return FrozenSetRecord.from_json(data)
