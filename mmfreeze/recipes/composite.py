"""Composite targets: one `_target_` that builds a base and a second model and trains them together.

nemo-automodel 0.7.0 has one, ``Gemma4WithDrafter.from_pretrained``
(``components/models/gemma4_drafter/composite.py``, accepted by the VLM recipe's
``_accepted_targets``). It loads the base from ``base_path`` (alias ``pretrained_model_name_or_path``)
through ``NeMoAutoModelForImageTextToText`` with the recipe's ``freeze_config``, the drafter from
``drafter_path`` through ``NeMoAutoModelForCausalLM`` with none, then constructs the composite,
whose ``__init__`` freezes more (:class:`DrafterSection`). ``peft`` raises NotImplementedError there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mmfreeze.exceptions import MmfreezeError, RecipeError
from mmfreeze.recipes.interpolation import resolve_references

GEMMA4_WITH_DRAFTER = "nemo_automodel.components.models.gemma4_drafter.composite.Gemma4WithDrafter.from_pretrained"
COMPOSITE_TARGETS: Mapping[str, str] = MappingProxyType({GEMMA4_WITH_DRAFTER: "AutoModelForImageTextToText"})
"""Composite target -> the Auto class of its base (the model the recipe's `freeze_config` reaches)."""
DRAFTER_AUTO_CLASS = "AutoModelForCausalLM"
"""The drafter is loaded through ``NeMoAutoModelForCausalLM``."""


@dataclass(frozen=True, kw_only=True)
class DrafterSection:
    """The drafter of a ``Gemma4WithDrafter`` recipe and the constructor arguments that decide what
    the composite trains: it freezes the drafter's ``post_projection`` when ``num_steps`` is 1, its
    ``masked_embedding.centroids`` always, and the whole base with ``freeze_base``."""

    model_id: str
    """``model.drafter_path`` (``${...}`` resolved)."""
    num_steps: int = 1
    """``model.drafter_num_steps``."""
    freeze_base: bool = False
    """``model.freeze_base_for_drafter``."""
    share_embedding: bool = False
    """``model.share_embedding_with_base`` (copies weights once; trainability is untouched)."""

    def arguments(self) -> dict[str, Any]:
        """The composite constructor's keyword arguments."""
        return {"drafter_num_steps": self.num_steps, "freeze_base_for_drafter": self.freeze_base,
                "share_embedding_with_base": self.share_embedding}


def parse_drafter(section: Mapping[str, Any], document: Mapping[str, Any], *, source: str) -> DrafterSection:
    """The :class:`DrafterSection` of a composite recipe's `model:` section; what the composite
    rejects is an input error here."""
    if document.get("peft") is not None:
        raise RecipeError("Gemma4WithDrafter does not take LoRA (its from_pretrained raises NotImplementedError "
                          "for a peft_config): remove `peft:` or train the base alone", source=source, key="peft")
    drafter = section.get("drafter_path")
    if not isinstance(drafter, str) or not drafter.strip():
        raise RecipeError("Gemma4WithDrafter needs `drafter_path`: the drafter's model id (google/gemma-4-E2B-it-assistant) "
                          "or a local directory holding its config.json", source=source, key="model.drafter_path")
    steps = section.get("drafter_num_steps", 1)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise RecipeError(f"must be an integer >= 1 (the drafter's recurrent steps per batch), got {steps!r}",
                          source=source, key="model.drafter_num_steps")
    return DrafterSection(
        model_id=resolve_references(drafter, source=source, key="model.drafter_path"),
        num_steps=steps,
        freeze_base=read_flag(section, "freeze_base_for_drafter", where="model", source=source),
        share_embedding=read_flag(section, "share_embedding_with_base", where="model", source=source),
    )


def read_flag(section: Mapping[str, Any], key: str, *, where: str, source: str | None,
              error: type[MmfreezeError] = RecipeError) -> bool:
    """``section[key]`` (default false), which must be a boolean; ``where``: the section's key in the recipe;
    ``error``: what a reader that is not the recipe's own raises (the memory model's refusals, say)."""
    value = section.get(key, False)
    if not isinstance(value, bool):
        raise error(f"must be true or false, got {value!r}", source=source, key=f"{where}.{key}")
    return value
