"""A composite model built the framework's way: ``Gemma4WithDrafter`` over its two parts.

Each part is built as nemo-automodel loads it alone (the base through the recipe's Auto class,
the drafter through ``NeMoAutoModelForCausalLM``), then the framework's own composite class is
constructed over them on the meta device, so its constructor decides what it freezes
(``post_projection`` at one step, ``masked_embedding.centroids``, the whole base on request); no
rule of it is restated here. The structure keeps each part's own state and config facts
(:class:`~mmfreeze.models.structure.StructurePart`), because the framework trains each part with
its own policy before the composite exists (:mod:`mmfreeze.freeze.engine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mmfreeze.boundary.names import COMPOSITE
from mmfreeze.exceptions import EnvironmentBuildError, ModelBuildError, first_line
from mmfreeze.models.structure import ModelStructure, StructurePart, structure_of
from mmfreeze.recipes.composite import DrafterSection
from mmfreeze.versions import installed_version

if TYPE_CHECKING:
    from torch import nn

    from mmfreeze.models.loader import LiveModel

BASE, DRAFTER = "base", "drafter"
"""The attributes ``Gemma4WithDrafter`` holds its parts under."""


@dataclass(frozen=True, kw_only=True)
class DrafterBuild:
    """A composite's drafter section with the config found for its model id."""

    section: DrafterSection
    config: Mapping[str, Any]


def require_framework(*, source: str) -> None:
    """A composite is the framework's own class: without it installed, say so before building its parts."""
    from mmfreeze.boundary.names import DISTRIBUTION

    if installed_version(DISTRIBUTION) == "missing":
        raise EnvironmentBuildError(f"Gemma4WithDrafter is {DISTRIBUTION}'s own class, and mmfreeze builds "
                                    f"it with it: install it (pip install --no-deps {DISTRIBUTION})",
                                    source=source, key="model._target_")


def build_composite(base: nn.Module, drafter: nn.Module, section: DrafterSection, *, source: str) -> nn.Module:
    """The framework's ``Gemma4WithDrafter`` over the two parts, wherever they were built (its
    constructor makes no tensor of its own); what it rejects is a :class:`ModelBuildError` naming ``source``."""
    from mmfreeze.models.framework_build import framework_module

    composite_class = framework_module(COMPOSITE).Gemma4WithDrafter
    try:
        return composite_class(base, drafter, **section.arguments())
    except Exception as error:  # the constructor checks its parts with ValueError and assert
        raise ModelBuildError(f"nemo-automodel's Gemma4WithDrafter rejects these parts ({section.model_id} as the "
                              f"drafter): {type(error).__name__}: {first_line(error)}", source=source, key="model") from error


def composite_structure(base: LiveModel, drafter: LiveModel, section: DrafterSection, *, source: str) -> ModelStructure:
    """The composite's structure: every parameter as its part built it, and apart from that
    (``composite_frozen``) what the composite's constructor froze."""
    parts = {BASE: base.structure(), DRAFTER: drafter.structure()}  # before the constructor touches them
    whole = structure_of(build_composite(base.model, drafter.model, section, source=source))
    built = {f"{prefix}.{info.name}": info.requires_grad for prefix, part in parts.items() for info in part.parameters}
    return replace(
        whole,
        parameters=tuple(replace(info, requires_grad=built[info.name]) for info in whole.parameters),
        build_note="; ".join(f"{prefix}: {part.build_note}" for prefix, part in parts.items() if part.build_note),
        built_by="; ".join(f"{prefix}: {part.built_by}" for prefix, part in parts.items() if part.built_by),
        parts=tuple(
            StructurePart(prefix=prefix, class_name=part.class_name, config_facts=part.config_facts,
                          freeze_config=prefix == BASE, root_attributes=part.root_attributes)
            for prefix, part in parts.items()
        ),
        composite_frozen=frozenset(info.name for info in whole.parameters if built[info.name] and not info.requires_grad),
    )
