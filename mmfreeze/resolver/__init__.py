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
    "ARCHITECTURE_TABLE": "mmfreeze.resolver.table",
    "ArchitectureEntry": "mmfreeze.resolver.entry",
    "CLASS_ATTRIBUTE": "mmfreeze.resolver.entry",
    "LANGUAGE_GROUP": "mmfreeze.resolver.inventory",
    "LanguagePart": "mmfreeze.resolver.entry",
    "ModuleDecl": "mmfreeze.resolver.entry",
    "MultimodalModuleSpec": "mmfreeze.resolver.spec",
    "ResolvedInventory": "mmfreeze.resolver.inventory",
    "ResolvedLanguageModel": "mmfreeze.resolver.inventory",
    "ResolvedModuleInfo": "mmfreeze.resolver.inventory",
    "ResolvedMultimodalModule": "mmfreeze.resolver.spec",
    "SpecSource": "mmfreeze.resolver.spec",
    "Unowned": "mmfreeze.resolver.entry",
    "bind_modules": "mmfreeze.resolver.bind",
    "canonical_path": "mmfreeze.resolver.paths",
    "get_class_entry": "mmfreeze.resolver.bind",
    "resolve_model_inventory": "mmfreeze.resolver.bind",
    "resolve_multimodal_modules": "mmfreeze.resolver.bind",
    "resolve_structure": "mmfreeze.resolver.resolve",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
