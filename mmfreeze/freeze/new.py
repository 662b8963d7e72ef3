"""The new `freeze_config` engine: (modality, role) flags, the whole language model, module paths.

It acts through the resolver's ownership, so ``vision.tower`` and ``vision.projector`` are
disjoint sets even when the projector lives inside the tower. Nothing is frozen that the section
does not name, and nothing is ever unfrozen: ``false`` means "do not freeze".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mmfreeze.freeze.config import FreezeConfig, check_against_model, parse_freeze_config
from mmfreeze.freeze.plan import FreezePlan, plan_from_matches
from mmfreeze.models.structure import ModelStructure
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.resolve import resolve_structure

LANGUAGE_MODEL_RULE = "language_model"


def roles_by_modality(inventory: ResolvedInventory) -> dict[str, list[str]]:
    """The (modality, role) pairs a `freeze_config` may name for this model, in resolver order.

    A modality whose modules all have ``role=None`` is listed with no roles: it exists, but only
    `modules:` can address it."""
    roles: dict[str, list[str]] = {}
    for info in inventory.modules:
        found = roles.setdefault(info.spec.modality, [])
        if info.spec.role is not None and info.spec.role not in found:
            found.append(info.spec.role)
    return roles


def addressable_paths(inventory: ResolvedInventory) -> set[str]:
    """Canonical paths `modules:` may name: every module and every parameter."""
    return set(inventory.raw_module_paths) | set(inventory.raw_parameter_names)


def plan_new_freeze(
    structure: ModelStructure,
    section: FreezeConfig | Any,
    *,
    source: str | None = None,
    inventory: ResolvedInventory | None = None,
) -> FreezePlan:
    """Validate ``section`` against the model and plan what it freezes (raw parameter names)."""
    config = section if isinstance(section, FreezeConfig) else parse_freeze_config(section, source=source)
    inventory = inventory if inventory is not None else resolve_structure(structure)
    check_against_model(
        config,
        roles_by_modality=roles_by_modality(inventory),
        module_paths=addressable_paths(inventory),
        source=source,
    )
    raw = inventory.raw_parameter_names
    return plan_from_matches((raw[name], rule) for name, rule in _matches(config, inventory))


def _matches(config: FreezeConfig, inventory: ResolvedInventory) -> Iterator[tuple[str, str]]:
    for info in inventory.modules:
        if info.spec.role is not None and config.roles.get(info.spec.modality, {}).get(info.spec.role, False):
            rule = f"{info.spec.modality}.{info.spec.role}"
            yield from ((name, rule) for name in info.parameters)
    if config.language_model:
        yield from ((name, LANGUAGE_MODEL_RULE) for name in inventory.language_model.parameters)
    canonical_names = sorted(set(inventory.raw_parameter_names))
    for path in config.modules:
        prefix = path + "."
        rule = f"modules: {path}"
        yield from ((name, rule) for name in canonical_names if name == path or name.startswith(prefix))
