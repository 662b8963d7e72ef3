"""What resolution produces: pure data about one model, ready to bind, freeze or display."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mmfreeze.resolver.spec import MultimodalModuleSpec, SpecSource

LANGUAGE_GROUP = "language"


@dataclass(frozen=True, kw_only=True)
class ResolvedModuleInfo:
    """A resolved multimodal module without its live object (see :func:`bind_modules`)."""

    spec: MultimodalModuleSpec
    """Canonical path, modality, role, conditional execution."""
    source: SpecSource
    raw_path: str
    """Path of the module in the model as given (wrappers included)."""
    module_class: str
    parameters: tuple[str, ...]
    """Canonical names of the parameters this module owns (the most specific resolved module
    containing a parameter owns it, so a projector inside a tower is not counted in the tower)."""
    numel: int


@dataclass(frozen=True, kw_only=True)
class ResolvedLanguageModel:
    """The language model's parts and the parameters they own."""

    parts: Mapping[str, str]
    """Part name (``decoder``, ``embeddings``, ``lm_head``, ``other``) -> canonical module path.
    ``other`` parts are numbered (``other``, ``other.1``, ...) when several exist."""
    tied_lm_head: bool
    """``lm_head`` shares its weight with a module outside it (usually the token embeddings)."""
    parameters: tuple[str, ...]
    numel: int


@dataclass(frozen=True, kw_only=True)
class ResolvedInventory:
    """Every multimodal module, the language model, and who owns each parameter, for one model."""

    class_name: str
    source: SpecSource
    """Where the inventory came from: ``caller``, ``class``, ``table`` or ``heuristic``."""
    modules: tuple[ResolvedModuleInfo, ...]
    language_model: ResolvedLanguageModel
    unowned: tuple[str, ...]
    """Canonical names of parameters owned by no multimodal module and not by the language model."""
    unowned_reasons: Mapping[str, str]
    """Unowned parameter -> the declared reason (missing when undeclared)."""
    layer_containers: Mapping[str, tuple[str, ...]]
    """Group (``language`` or a modality) -> canonical paths of its transformer-layer lists."""
    raw_parameter_names: Mapping[str, str]
    """Canonical parameter name (any alias) -> raw name in the model as given."""
    raw_module_paths: Mapping[str, str]
    """Canonical module path -> raw path in the model as given."""
