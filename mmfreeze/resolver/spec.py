"""What a multimodal module is: the stable declaration and its binding to a live module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from torch import nn

SpecSource = Literal["class", "table", "heuristic", "override", "caller"]


@dataclass(frozen=True)
class MultimodalModuleSpec:
    """A multimodal submodule, addressed by its canonical path from the model root.

    ``modality`` and ``role`` are open strings: ``vision`` / ``audio`` / ``video`` and ``tower`` /
    ``projector`` / ``embedder`` / ``resampler`` / ``generator`` are conventions, not an enum, so a
    structure or graph encoder can be addressed without being mislabelled. ``role`` is ``None``
    where a fallback cannot tell. Frozen state is never stored here: it is read live from
    ``requires_grad``.
    """

    path: str
    modality: str
    """Required: a default would silently count an undeclared module as one modality."""
    role: str | None = None
    conditionally_executed: bool = True
    """The model's forward may skip this module (e.g. on a text-only batch)."""


@dataclass(frozen=True)
class ResolvedMultimodalModule:
    """A spec bound to the live module object it names, with where the spec came from."""

    spec: MultimodalModuleSpec
    module: nn.Module
    source: SpecSource
    raw_path: str = ""
    """Path of ``module`` in the model as given (wrappers included); ``spec.path`` is canonical."""
    numel: int = 0
    """Elements of the parameters this module owns (most-specific rule, see ``ResolvedInventory``)."""
