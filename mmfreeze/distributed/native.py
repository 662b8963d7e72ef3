"""Which of a recipe's sections nemo-automodel 0.7 runs itself, and which need mmfreeze's integration.

0.7 builds `distributed.multimodal` with dataclass constructors (``recipes/_dist_utils.py``:
``MultimodalDistributedConfig(frozen_sharding, vision)``, ``MultimodalVisionConfig(frame_sharding)``,
``CpVisionFrameShardingConfig``), so any other key is a ``TypeError`` there; it parses
`freeze_config` with its six keys only; and an `optimizer.param_group_overrides` entry is
``ParamGroupOverride(**entry)``, so one that names its tensors with a selector instead of a
``pattern`` is a ``TypeError`` too. :data:`FRAMEWORK_MULTIMODAL_KEYS` is that key tree. What
lies outside it is an mmfreeze addition, which only the integration (``mmfreeze.nemo``) applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mmfreeze.distributed.config import CONFIG_KEY, FRAME_SHARDING_KEYS
from mmfreeze.distributed.legacy_keys import NESTED_PATHS
from mmfreeze.freeze.keys import SECTION as FREEZE_SECTION
from mmfreeze.freeze.keys import detect_vocabulary, strict_problems
from mmfreeze.freeze.optimizer import PATTERN_KEY
from mmfreeze.recipes.optimizer import OVERRIDES
from mmfreeze.recipes.optimizer import SECTION as OPTIMIZER

FRAMEWORK_MULTIMODAL_KEYS: Mapping[str, Any] = {
    "frozen_sharding": None,
    "vision": {"frame_sharding": dict.fromkeys(FRAME_SHARDING_KEYS)},
}
"""nemo-automodel 0.7.0's `distributed.multimodal` keys; ``None`` marks a value, a mapping a nested section."""

Verdict = Literal["native", "needs the integration", "rejected by nemo-automodel 0.7"]
NATIVE_VERDICTS: tuple[Verdict, ...] = ("native", "needs the integration", "rejected by nemo-automodel 0.7")


@dataclass(frozen=True, kw_only=True)
class NativeSupport:
    """Whether nemo-automodel 0.7 runs a recipe as it is, and the keys that decide it."""

    verdict: Verdict
    keys: tuple[str, ...] = ()
    """The keys that need the integration (or that 0.7 rejects), as recipe key paths."""

    def describe(self) -> str:
        return f"{self.verdict} ({', '.join(self.keys)})" if self.keys else self.verdict


def split_framework_keys(section: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``section`` (a `distributed.multimodal` mapping) as the part the framework defines, and the
    key paths of mmfreeze's additions. A value of the wrong shape stays in the framework's part,
    so the framework's own validation reports it."""
    return _split(section, FRAMEWORK_MULTIMODAL_KEYS, CONFIG_KEY)


def _split(section: Mapping[str, Any], known: Mapping[str, Any], prefix: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    framework: dict[str, Any] = {}
    additions: list[str] = []
    for key, value in section.items():
        if key not in known:
            additions.append(f"{prefix}.{key}")
        elif known[key] is None or not isinstance(value, Mapping):
            framework[key] = value
        else:
            framework[key], nested = _split(value, known[key], f"{prefix}.{key}")
            additions += nested
    return framework, tuple(additions)


def native_support(document: Mapping[str, Any]) -> NativeSupport:
    """The verdict for one recipe document: its `freeze_config` and `distributed.multimodal`."""
    freeze = document.get(FREEZE_SECTION)
    vocabulary = detect_vocabulary(freeze)
    distributed = document.get("distributed")
    distributed = distributed if isinstance(distributed, Mapping) else {}
    rejected = strict_problems(freeze) if vocabulary == "legacy" else []
    # 0.7 passes unknown flat keys to its strategy dataclass, which rejects them; `migrate` nests them.
    rejected += [f"distributed.{key}: legacy key" for key in NESTED_PATHS if key in distributed]
    if rejected:
        return NativeSupport(verdict="rejected by nemo-automodel 0.7", keys=tuple(rejected))
    needs = [f"{FREEZE_SECTION}.{key}" for key in freeze] if vocabulary == "new" else []
    multimodal = distributed.get("multimodal")
    needs += split_framework_keys(multimodal)[1] if isinstance(multimodal, Mapping) else ()
    needs += _selector_rate_entries(document)
    return NativeSupport(verdict="needs the integration", keys=tuple(needs)) if needs else NativeSupport(verdict="native")


def _selector_rate_entries(document: Mapping[str, Any]) -> list[str]:
    """The `param_group_overrides` entries without a ``pattern`` (mmfreeze's selectors)."""
    optimizer = document.get(OPTIMIZER)
    entries = optimizer.get(OVERRIDES) if isinstance(optimizer, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [f"{OPTIMIZER}.{OVERRIDES}[{index}]" for index, entry in enumerate(entries)
            if isinstance(entry, Mapping) and PATTERN_KEY not in entry]
