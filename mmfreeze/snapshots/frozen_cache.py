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
import math
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
        """The record :meth:`to_json` wrote; any other shape or type is a ``ValueError`` (a miss)."""
        _require(isinstance(data, Mapping) and data.get("format") == RECORD_FORMAT_VERSION,
                 f"frozen-set record format {_format_of(data)!r} is not {RECORD_FORMAT_VERSION}")
        _require(set(data) == _RECORD_KEYS, f"frozen-set record keys differ: {sorted(set(data) ^ _RECORD_KEYS)}")
        for name in _TEXT_FIELDS:
            _require(isinstance(data[name], str), f"{name} is not text")
        for name in _COUNT_FIELDS:
            _require(_is_count(data[name]), f"{name} is not a count")
        adapters = data["adapter_lines"]
        return cls(
            **{name: data[name] for name in (*_TEXT_FIELDS, *_COUNT_FIELDS)},
            lines=_lines(data["lines"]),
            adapter_lines=None if adapters is None else _lines(adapters),
            renames=Renames.from_json(data["renames"]),
            rates=tuple(RateLines(lr_mult=_rate(rate["lr_mult"]), wd_mult=_rate(rate["wd_mult"]), lines=_lines(rate["lines"]))
                        for rate in _records(data["rates"])),
            reach=tuple(ReachLines(mix=_text(reach["mix"]), method=_text(reach["method"]),
                                   not_probed=_text(reach["not_probed"]),
                                   groups=tuple(GroupLines(label=_text(group["label"]), tensors=_count(group["tensors"]),
                                                           lines=_lines(group["lines"]))
                                                for group in _records(reach["groups"])))
                        for reach in _records(data["reach"])),
        )


_TEXT_FIELDS = ("architecture", "framework", "transformers", "build_note", "built_by", "mixes")
_COUNT_FIELDS = ("frozen_tensors", "frozen_parameters", "trainable_tensors", "trainable_parameters")
_RECORD_KEYS = frozenset({*_TEXT_FIELDS, *_COUNT_FIELDS, "lines", "adapter_lines", "renames", "rates", "reach", "format"})


def _require(condition: bool, problem: str) -> None:
    if not condition:
        raise ValueError(problem)


def _format_of(data: Any) -> Any:
    return data.get("format") if isinstance(data, Mapping) else type(data).__name__


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _count(value: Any) -> int:
    _require(_is_count(value), f"{value!r} is not a count")
    return value


def _text(value: Any) -> str:
    _require(isinstance(value, str), f"{value!r} is not text")
    return value


def _rate(value: Any) -> float:
    _require(type(value) in (int, float) and math.isfinite(value), f"{value!r} is not a finite rate")
    return value


def _lines(value: Any) -> tuple[str, ...]:
    _require(isinstance(value, list) and all(isinstance(line, str) for line in value), "stored lines are not a list of text")
    return tuple(value)


def _records(value: Any) -> list[Mapping[str, Any]]:
    _require(isinstance(value, list) and all(isinstance(item, Mapping) for item in value), "not a list of records")
    return value


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
        return cached_error_type(self.error_type)(self.message, source=recipe, key=self.key)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "failed": True, "format": RECORD_FORMAT_VERSION}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FailedComputation:
        """The record :meth:`to_json` wrote. Anything else is a ``ValueError``, and so a miss that is
        computed again: an error type no computation stores (another release's, or a hand-edited
        record) is never raised, nor guessed at."""
        _require(data.get("format") == RECORD_FORMAT_VERSION,
                 f"failure record format {data.get('format')!r} is not {RECORD_FORMAT_VERSION}")
        _require(set(data) == {"error_type", "message", "key", "failed", "format"}, "failure record keys differ")
        cached_error_type(_text(data["error_type"]))
        key = data["key"]
        return cls(error_type=data["error_type"], message=_text(data["message"]), key=None if key is None else _text(key))


def cached_error_type(name: str) -> type[exceptions.MmfreezeError]:
    """The :mod:`mmfreeze.exceptions` class ``name`` of a stored failure, else ``ValueError``: one
    that the computation caches (not an error of where a config was found, nor of this machine),
    and whose constructor takes what the record holds (a message, the recipe and the key)."""
    error_type = vars(exceptions).get(name)
    _require(isinstance(error_type, type) and issubclass(error_type, exceptions.MmfreezeError)
             and not issubclass(error_type, NEVER_CACHED) and error_type.__init__ is exceptions.MmfreezeError.__init__,
             f"{name!r} is not an error a failure record stores")
    return error_type


NEVER_CACHED = (exceptions.ConfigSourceError, exceptions.EnvironmentBuildError)
"""Errors decided by something outside the key (where a config is found, what this machine imports):
:func:`mmfreeze.snapshots.compute._computed_or_failed` never stores them."""


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
        _require(isinstance(data, Mapping), f"a frozen-set entry is a JSON object, not {type(data).__name__}")
        if data.get("failed") is True:
            return FailedComputation.from_json(data)
        return FrozenSetRecord.from_json(data)
