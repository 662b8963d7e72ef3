"""One answer to "which submodule is the vision/audio tower, the projector, the language model".

Pure core: :func:`resolve_structure` works on a :class:`~mmfreeze.models.structure.ModelStructure`
without torch. Live edge: :func:`resolve_multimodal_modules` reads the model, resolves, and binds
each canonical path to the module object in the model as given (call it after PEFT and wrapping).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mmfreeze.resolver.bind import bind_modules, get_class_entry, resolve_model_inventory, resolve_multimodal_modules
    from mmfreeze.resolver.entry import ArchitectureEntry, CLASS_ATTRIBUTE, LanguagePart, ModuleDecl, Unowned
    from mmfreeze.resolver.inventory import LANGUAGE_GROUP, ResolvedInventory, ResolvedLanguageModel, ResolvedModuleInfo
    from mmfreeze.resolver.paths import canonical_path
    from mmfreeze.resolver.resolve import resolve_structure
    from mmfreeze.resolver.spec import MultimodalModuleSpec, ResolvedMultimodalModule, SpecSource
    from mmfreeze.resolver.table import ARCHITECTURE_TABLE

# Imported on first use: a warm snapshot run labels parameters (`resolver.labels`) and must not
# pay for the architecture tables and the live binder through this package's exports.
_EXPORTS = {
    "mmfreeze.resolver.bind": ("bind_modules", "get_class_entry", "resolve_model_inventory",
                               "resolve_multimodal_modules"),
    "mmfreeze.resolver.entry": ("ArchitectureEntry", "CLASS_ATTRIBUTE", "LanguagePart", "ModuleDecl", "Unowned"),
    "mmfreeze.resolver.inventory": ("LANGUAGE_GROUP", "ResolvedInventory", "ResolvedLanguageModel",
                                    "ResolvedModuleInfo"),
    "mmfreeze.resolver.paths": ("canonical_path",),
    "mmfreeze.resolver.resolve": ("resolve_structure",),
    "mmfreeze.resolver.spec": ("MultimodalModuleSpec", "ResolvedMultimodalModule", "SpecSource"),
    "mmfreeze.resolver.table": ("ARCHITECTURE_TABLE",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
