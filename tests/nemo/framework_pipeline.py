"""A recipe's trainability sections through nemo-automodel's own pipeline, on a meta-built model.

Recipe documents are plain dicts and lists (safe YAML), as the recipe hands its sections over
(``ConfigNode.to_dict()``). Nothing here restates the framework's rules: LoRA goes through its ``PeftConfig`` and
``apply_lora_to_linear_modules``, `freeze_config` through its ``parse_freeze_config`` and
``_apply_trainability_policy``, each looked up on the framework's module when it is called (so
an installed integration is what runs). The models are built once per (model, builder) on meta,
by mmfreeze's one meta-device build, and copied for each recipe.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.models.framework import choose_builder
from mmfreeze.models.loader import build_requested_model, find_config
from mmfreeze.models.structure import structure_of
from mmfreeze.recipes.recipe import Recipe, load_recipe
from mmfreeze.recipes.targets import DEFAULT_TARGETS
from tests.conftest import REPO_ROOT

BUILDERS = ("framework", "transformers")


@dataclass(frozen=True)
class Outcome:
    """What a pipeline left trainable (every name, tied aliases included), or the error it raised."""

    trainable: frozenset[str] = frozenset()
    error: str = ""


def read_recipe(path: Path) -> Recipe:
    return load_recipe(path, allowed_targets=DEFAULT_TARGETS, root=REPO_ROOT)


_MODELS: dict[tuple[Any, ...], Any] = {}
"""Meta-built models by (model id, Auto class, build spec): each is built once per test run."""


def built_model(path: Path, builder: str) -> Any:
    """The recipe's model under ``builder``, built on meta once per run (never mutate it)."""
    request = model_request(read_recipe(path), choose_builder(builder))
    key = (request.model_id.lower(), request.auto_class, request.build)
    if key not in _MODELS:
        _MODELS[key] = build_requested_model(request, find_config(request))
    return _MODELS[key]


def fresh_model(path: Path, builder: str) -> Any:
    """A copy of :func:`built_model` for a pipeline to mutate."""
    return copy.deepcopy(built_model(path, builder))


def framework_outcome(path: Path, builder: str) -> Outcome:
    """The recipe's `peft` and `freeze_config` through the framework's pipeline on a fresh model."""
    from nemo_automodel._transformers import infrastructure
    from nemo_automodel.components._peft.lora import PeftConfig, apply_lora_to_linear_modules
    from nemo_automodel.components.utils import model_utils

    document = read_recipe(path).document
    model = fresh_model(path, builder)
    peft = document.get("peft")
    try:
        peft_config = None
        if peft is not None:
            peft_config = PeftConfig(**{key: value for key, value in peft.items() if key != "_target_"})
            apply_lora_to_linear_modules(model, peft_config, skip_freeze=True)
        parsed = model_utils.parse_freeze_config(document.get("freeze_config"))
        infrastructure._apply_trainability_policy(
            model, peft_enabled=peft_config is not None, freeze_config=parsed, strict=True)
    except Exception as error:  # noqa: BLE001 - the framework's own rejection is the outcome
        return Outcome(error=f"{type(error).__name__}: {error}")
    return Outcome(trainable=frozenset(
        name for name, parameter in model.named_parameters(remove_duplicate=False) if parameter.requires_grad))


def mmfreeze_outcome(path: Path, builder: str) -> Outcome:
    """What mmfreeze computes for the recipe on the same model (the snapshot's frozen set)."""
    result = recipe_frozen_set(read_recipe(path), structure_of(built_model(path, builder)))
    return Outcome(trainable=frozenset(
        name for info in result.structure.parameters if info.name not in result.frozen for name in info.names))

