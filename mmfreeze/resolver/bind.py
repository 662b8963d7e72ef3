"""The live edge: read a model's structure and class declaration, resolve, bind to modules.

Bind after every structural transformation (PEFT, wrappers): the returned module objects are the
ones in the model as given. Nothing here caches ``requires_grad``; read it from the parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mmfreeze.exceptions import ResolverError
from mmfreeze.models.structure import structure_of
from mmfreeze.resolver.canonical import canonicalize
from mmfreeze.resolver.entry import CLASS_ATTRIBUTE, ArchitectureEntry
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.resolve import resolve_structure
from mmfreeze.resolver.spec import MultimodalModuleSpec, ResolvedMultimodalModule

if TYPE_CHECKING:
    from torch import nn


def resolve_model_inventory(
    model: nn.Module,
    *,
    declared_specs: Sequence[MultimodalModuleSpec] = (),
    override_specs: Sequence[MultimodalModuleSpec] = (),
) -> ResolvedInventory:
    """:func:`resolve_structure` on a live model, with the class's own declaration if it has one."""
    structure = structure_of(model)
    inner = model.get_submodule(canonicalize(structure).raw_module_paths[""])
    return resolve_structure(
        structure,
        declared_specs=declared_specs,
        override_specs=override_specs,
        class_entry=get_class_entry(type(inner)),
    )


def resolve_multimodal_modules(
    model: nn.Module,
    *,
    declared_specs: Sequence[MultimodalModuleSpec] = (),
    override_specs: Sequence[MultimodalModuleSpec] = (),
) -> tuple[ResolvedMultimodalModule, ...]:
    """The multimodal modules of ``model``, each with its spec, live module and source."""
    inventory = resolve_model_inventory(model, declared_specs=declared_specs, override_specs=override_specs)
    return bind_modules(model, inventory)


def bind_modules(model: nn.Module, inventory: ResolvedInventory) -> tuple[ResolvedMultimodalModule, ...]:
    """Attach the live module objects of ``model`` to a (possibly cached) inventory."""
    return tuple(
        ResolvedMultimodalModule(
            spec=info.spec,
            module=_submodule(model, info.raw_path),
            source=info.source,
            raw_path=info.raw_path,
            numel=info.numel,
        )
        for info in inventory.modules
    )


def get_class_entry(model_class: type) -> ArchitectureEntry | None:
    """The class's own ``mmfreeze_architecture`` declaration, if any (inherited ones count)."""
    entry = getattr(model_class, CLASS_ATTRIBUTE, None)
    if entry is not None and not isinstance(entry, ArchitectureEntry):
        raise ResolverError(
            f"{model_class.__name__}.{CLASS_ATTRIBUTE} is a {type(entry).__name__}, not an ArchitectureEntry",
            key=CLASS_ATTRIBUTE,
        )
    return entry


def _submodule(model: nn.Module, raw_path: str) -> nn.Module:
    try:
        return model.get_submodule(raw_path)
    except AttributeError as error:
        raise ResolverError(
            f"module {raw_path!r} is no longer in the model; resolve again after changing its structure",
            key="bind",
        ) from error
