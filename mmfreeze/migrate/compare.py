"""Parameter-level differences grouped by the module a reviewer recognises, with counts."""

from __future__ import annotations

from collections.abc import Iterable

from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.resolver.labels import ModuleGroup, group_names, parameter_labeller


def group_parameters(raw_names: Iterable[str], targets: FreezeTargets) -> tuple[ModuleGroup, ...]:
    """``raw_names`` (of ``targets.structure``, the trained model) grouped as the snapshot reports
    group them (:mod:`mmfreeze.resolver.labels`), each group with its tensors and parameters."""
    numel = {info.name: info.numel for info in targets.structure.parameters}
    return group_names(raw_names, numel_of=numel, group_of=parameter_labeller(targets.inventory))
