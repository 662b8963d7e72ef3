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
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.models.framework import choose_builder
from mmfreeze.disk_cache import default_cache_dir
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import build_requested_model, find_config, load_structure
from mmfreeze.models.structure import structure_of
from mmfreeze.recipes.composite import DrafterSection
from mmfreeze.recipes.recipe import Recipe, load_recipe
from mmfreeze.recipes.targets import DEFAULT_TARGETS
from tests.conftest import REPO_ROOT

BUILDERS = ("framework", "transformers")


@dataclass(frozen=True)
class Outcome:
    """What a pipeline left trainable (every name, tied aliases included), or the error it raised."""

    trainable: frozenset[str] = frozenset()
    error: str = ""


@cache
def read_recipe(path: Path) -> Recipe:
    """The recipe at ``path``, read once per test process (several modules parametrize over the
    corpus at collection); callers read it and never mutate it."""
    return load_recipe(path, allowed_targets=DEFAULT_TARGETS, root=REPO_ROOT)


_MODELS: dict[tuple[Any, ...], Any] = {}
"""Meta-built models by (model id, Auto class, build spec, composite drafter): each is built once per test run."""


def built_model(path: Path, builder: str) -> Any:
    """The recipe's model under ``builder``, built on meta once per run (never mutate it)."""
    request = model_request(read_recipe(path), choose_builder(builder))
    key = (request.model_id.lower(), request.auto_class, request.build, request.drafter)
    if key not in _MODELS:
        _MODELS[key] = build_requested_model(request, find_config(request))
    return _MODELS[key]


def fresh_model(path: Path, builder: str) -> Any:
    """A copy of :func:`built_model` for a pipeline to mutate."""
    return copy.deepcopy(built_model(path, builder))


def through_composite(model: Any, drafter: DrafterSection | None, load: Callable[[Any, bool], None]) -> Any:
    """``Gemma4WithDrafter.from_pretrained``'s order on a meta-built model: each part trained as
    loaded alone (``load(part, forwarded)``: the recipe's sections reach the base only), then the
    framework's own constructor over the parts. Any other model is loaded as it is."""
    if drafter is None:
        load(model, True)
        return model
    for parameter in model.parameters():
        parameter.requires_grad_(True)  # the parts as built: before the composite's constructor froze anything
    load(model.base, True)
    load(model.drafter, False)
    return type(model)(model.base, model.drafter, **drafter.arguments())


def framework_trained(path: Path, builder: str, *, source: bool = False) -> Any:
    """A fresh model with the recipe's `peft` and `freeze_config` applied by the framework's pipeline;
    the framework's error when it rejects them. The sections are the file's as the framework reads
    them (a compiled recipe's compiled `freeze_config`), or with ``source`` its `mmfreeze:` source."""
    from nemo_automodel._transformers import infrastructure
    from nemo_automodel.components._peft.lora import PeftConfig, apply_lora_to_linear_modules
    from nemo_automodel.components.utils import model_utils

    recipe = read_recipe(path)
    document = recipe.document if source else recipe.framework_document
    peft = document.get("peft")

    def load(model: Any, forwarded: bool) -> None:
        peft_config = None
        if peft is not None and forwarded:
            peft_config = PeftConfig(**{key: value for key, value in peft.items() if key != "_target_"})
            apply_lora_to_linear_modules(model, peft_config, skip_freeze=True)
        parsed = model_utils.parse_freeze_config(document.get("freeze_config") if forwarded else None)
        infrastructure._apply_trainability_policy(
            model, peft_enabled=peft_config is not None, freeze_config=parsed, strict=True)

    return through_composite(fresh_model(path, builder), recipe.model.drafter, load)


def framework_outcome(path: Path, builder: str, *, source: bool = False) -> Outcome:
    """The recipe's `peft` and `freeze_config` through the framework's pipeline on a fresh model."""
    try:
        model = framework_trained(path, builder, source=source)
    except Exception as error:  # noqa: BLE001 - the framework's own rejection is the outcome
        return Outcome(error=f"{type(error).__name__}: {error}")
    return Outcome(trainable=frozenset(
        name for name, parameter in model.named_parameters(remove_duplicate=False) if parameter.requires_grad))


def mmfreeze_outcome(path: Path, builder: str) -> Outcome:
    """What mmfreeze computes for the recipe on the same model (the snapshot's frozen set). A
    composite's structure is the product's own (its parts as built, its constructor's freezes
    apart), from the run's cache: the live composite no longer shows its parts as built."""
    recipe = read_recipe(path)
    if recipe.model.drafter is not None:
        structure = load_structure(model_request(recipe, choose_builder(builder)), StructureCache(default_cache_dir())).structure
    else:
        structure = structure_of(built_model(path, builder))
    result = recipe_frozen_set(recipe, structure)
    return Outcome(trainable=frozenset(
        name for info in result.structure.parameters if info.name not in result.frozen for name in info.names))



def assert_stock_framework() -> None:
    """Nothing of mmfreeze replaces the framework's functions in this process."""
    from nemo_automodel._transformers import infrastructure
    from nemo_automodel.components.optim import optimizer
    from nemo_automodel.components.utils import model_utils

    from mmfreeze import nemo

    assert not nemo.installed()
    for function in (infrastructure._apply_trainability_policy, infrastructure.parse_freeze_config,
                     infrastructure.apply_parameter_freezing, model_utils.parse_freeze_config,
                     optimizer._coerce_param_group_overrides, optimizer.OptimizerConfig.build):
        assert function.__module__.startswith("nemo_automodel."), function
