"""A recipe's `multimodal.modules` overrides (read and validated by :mod:`mmfreeze.recipes.multimodal`)
as resolver specs: the recipe layer stays plain data, the resolver owns its spec type."""

from __future__ import annotations

from collections.abc import Iterable

from mmfreeze.recipes.multimodal import ModuleOverride
from mmfreeze.resolver.spec import MultimodalModuleSpec


def override_specs(overrides: Iterable[ModuleOverride]) -> tuple[MultimodalModuleSpec, ...]:
    """One spec per override, in the recipe's order (the resolver reports duplicates)."""
    return tuple(
        MultimodalModuleSpec(
            path=override.path,
            modality=override.modality,
            role=override.role,
            conditionally_executed=override.conditionally_executed,
        )
        for override in overrides
    )
