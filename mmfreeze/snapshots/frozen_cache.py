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
from typing import Any

from mmfreeze import exceptions
from mmfreeze.disk_cache import DiskCache
from mmfreeze.reachability.mix import mix_material
from mmfreeze.recipes.optimizer import grouping_material
from mmfreeze.recipes.recipe import TRAINABILITY_SECTIONS
from mmfreeze.snapshots.format import Snapshot, parse_snapshot, render_snapshot

RECORD_FORMAT_VERSION = 10
"""10: an entry holds the snapshot's own text (before: a record of its fields, a second shape of it);
an older entry is a miss."""


def encode_snapshot(snapshot: Snapshot) -> dict[str, Any]:
    return {"snapshot": render_snapshot(snapshot), "format": RECORD_FORMAT_VERSION}


def decode_snapshot(data: Mapping[str, Any]) -> Snapshot:
    """The snapshot :func:`encode_snapshot` stored; any other shape or text is a ``ValueError`` (a miss)."""
    _require(data.get("format") == RECORD_FORMAT_VERSION,
             f"frozen-set entry format {data.get('format')!r} is not {RECORD_FORMAT_VERSION}")
    _require(set(data) == {"snapshot", "format"}, f"frozen-set entry keys differ: {sorted(data)}")
    _require(isinstance(data["snapshot"], str), "the stored snapshot is not text")
    try:
        return parse_snapshot(data["snapshot"])
    except exceptions.SnapshotError as error:
        raise ValueError(f"the stored snapshot does not read back: {error}") from None


def _require(condition: bool, problem: str) -> None:
    if not condition:
        raise ValueError(problem)


def _text(value: Any) -> str:
    _require(isinstance(value, str), f"{value!r} is not text")
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


CachedComputation = Snapshot | FailedComputation


def frozen_set_key(
    structure_key: str, document: Mapping[str, Any], code_fingerprint: str, release: str, compiled: Any = None,
    target: str = "", recorded: Any = None,
) -> str:
    """Everything a recipe's frozen set depends on: its model structure, the sections the engine
    reads, the code that reads them, and the framework release whose rules apply; and its
    optimizer's grouping, whose silent cases fail the computation; and what says which data mixes
    its batches carry (reachability is reported per mix); and the sections compiled from the
    source, which the computation holds to it, with the renames recorded for the tree they were
    compiled on (``recorded``); and the model's ``_target_``, which decides whether the header says
    the framework builds another class."""
    sections = {name: document.get(name) for name in TRAINABILITY_SECTIONS}
    material = json.dumps([structure_key, code_fingerprint, sections, grouping_material(document),
                           mix_material(document), release, compiled, target, recorded], sort_keys=True, default=str)
    return hashlib.sha256(material.encode()).hexdigest()


class FrozenSetCache(DiskCache[CachedComputation]):
    """A computation's snapshot (as the first recipe to compute it stores it: a recipe sharing the
    key takes it with its own path, model id and config source), or the deterministic failure, by
    :func:`frozen_set_key`."""

    kind = "frozen_sets"

    def encode(self, value: CachedComputation) -> Any:
        return encode_snapshot(value) if isinstance(value, Snapshot) else value.to_json()

    def decode(self, data: Any) -> CachedComputation:
        _require(isinstance(data, Mapping), f"a frozen-set entry is a JSON object, not {type(data).__name__}")
        if data.get("failed") is True:
            return FailedComputation.from_json(data)
        return decode_snapshot(data)
