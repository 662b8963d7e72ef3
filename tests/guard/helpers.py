"""Models and snapshots the guard tests check: bundled recipes on meta, tiny real models.

Expected frozen sets never come from the model being checked: a bundled recipe's is its committed
snapshot; a tiny model's is computed by mmfreeze's engine from a recipe document on the freshly
built structure, then written as a snapshot file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mmfreeze.freeze.apply import apply_frozen_set
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.loader import build_requested_model, find_config
from mmfreeze.models.lora import add_live_lora_adapters, lora_targets, parse_peft_section
from mmfreeze.models.structure import structure_of
from mmfreeze.recipes.recipe import Recipe, load_recipe
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.snapshots.format import render_snapshot
from mmfreeze.snapshots.compute import snapshot_of
from mmfreeze.snapshots.layout import DEFAULT_SNAPSHOT_DIR, snapshot_path

REPO = Path(__file__).resolve().parents[2]
FINETUNE = "example_configs/vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2.yaml"
"""Qwen2.5-VL-7B, vision tower frozen (390 of 729 tensors)."""
LORA = "example_configs/vlm_peft/qwen2_5_vl/qwen2_5_vl_7b_lora_cord_v2.yaml"
"""Qwen2.5-VL-7B, LoRA on the language model's attention, vision frozen (new vocabulary)."""
FRAMEWORK_LORA = "example_configs/vlm_peft/internvl/internvl3_1b_lora_medpix.yaml"
"""InternVL3-1B, exclude-only LoRA and no freeze_config: the framework's own LoRA can run it."""
TINY_FREEZE = {"vision": {"tower": True, "projector": False}}
"""A new-vocabulary section for the tiny Llava: tower frozen, projector and language model trained."""


@dataclass(frozen=True)
class RecipeModel:
    recipe: Recipe
    model: torch.nn.Module


def recipe_on_meta(relative: str, *, inject_lora: bool = True) -> RecipeModel:
    """A bundled recipe's model on meta, trained the way the recipe says (mmfreeze's live LoRA)."""
    recipe = load_recipe(REPO / relative)
    request = model_request(recipe)
    model = build_requested_model(request, find_config(request))
    structure = structure_of(model)
    result = compute_frozen_set(structure, recipe.document, source=recipe.display_path,
                                override_specs=override_specs(recipe.module_overrides))
    if recipe.peft is not None and inject_lora:
        spec = parse_peft_section(recipe.peft, source=recipe.display_path)
        add_live_lora_adapters(model, lora_targets(structure, spec, result.rules.release), spec)
    apply_frozen_set(model, result.frozen)
    return RecipeModel(recipe=recipe, model=model)


def committed_snapshot(relative: str) -> Path:
    return snapshot_path(REPO / relative, REPO, REPO / DEFAULT_SNAPSHOT_DIR)


def write_snapshot(model: torch.nn.Module, document: Mapping[str, Any], root: Path, recipe_key: str) -> Path:
    """The snapshot mmfreeze computes for ``document`` on ``model``'s current structure, stored
    where `mmfreeze snapshot` run from ``root`` keeps it; the recipe file is created too."""
    (root / recipe_key).parent.mkdir(parents=True, exist_ok=True)
    (root / recipe_key).write_text("model: {}\n")
    result = compute_frozen_set(structure_of(model), document, source=recipe_key, override_specs=())
    snapshot = snapshot_of(result, recipe=recipe_key, model_id="tiny", config="local")
    path = snapshot_path(root / recipe_key, root, root / DEFAULT_SNAPSHOT_DIR)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_snapshot(snapshot), encoding="utf-8")
    return path


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [parameter for parameter in model.parameters() if parameter.requires_grad]


def named(model: torch.nn.Module, name: str) -> torch.nn.Parameter:
    return dict(model.named_parameters())[name]


def grad_flags(model: torch.nn.Module) -> dict[str, bool]:
    return {name: parameter.requires_grad for name, parameter in model.named_parameters()}


def reset_flags(model: torch.nn.Module, flags: Mapping[str, bool]) -> None:
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(flags[name])
