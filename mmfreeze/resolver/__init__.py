"""One answer to "which submodule is the vision/audio tower, the projector, the language model".

Pure core: :func:`resolve_structure` works on a :class:`~mmfreeze.models.structure.ModelStructure`
without torch. Live edge: :func:`resolve_multimodal_modules` reads the model, resolves, and binds
each canonical path to the module object in the model as given (call it after PEFT and wrapping).
"""

from mmfreeze.resolver.bind import bind_modules, get_class_entry, resolve_model_inventory, resolve_multimodal_modules
from mmfreeze.resolver.entry import CLASS_ATTRIBUTE, ArchitectureEntry, LanguagePart, ModuleDecl, Unowned
from mmfreeze.resolver.inventory import (
    LANGUAGE_GROUP,
    MULTIMODAL_SCOPE,
    ResolvedInventory,
    ResolvedLanguageModel,
    ResolvedModuleInfo,
)
from mmfreeze.resolver.paths import canonical_path
from mmfreeze.resolver.resolve import resolve_structure
from mmfreeze.resolver.spec import MultimodalModuleSpec, ResolvedMultimodalModule, SpecSource
from mmfreeze.resolver.table import ARCHITECTURE_TABLE

__all__ = [
    "ARCHITECTURE_TABLE",
    "CLASS_ATTRIBUTE",
    "LANGUAGE_GROUP",
    "MULTIMODAL_SCOPE",
    "ArchitectureEntry",
    "LanguagePart",
    "ModuleDecl",
    "MultimodalModuleSpec",
    "ResolvedInventory",
    "ResolvedLanguageModel",
    "ResolvedModuleInfo",
    "ResolvedMultimodalModule",
    "SpecSource",
    "Unowned",
    "bind_modules",
    "canonical_path",
    "get_class_entry",
    "resolve_model_inventory",
    "resolve_multimodal_modules",
    "resolve_structure",
]
