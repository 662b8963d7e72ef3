"""What `mmfreeze explain` reports about one recipe, as plain data (the CLI renders it)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from mmfreeze.distributed.native import native_support
from mmfreeze.explain.distributed import explain_distributed
from mmfreeze.explain.memory import explain_memory
from mmfreeze.memory.recipe import Teacher, WorldSize
from mmfreeze.explain.reach import explain_reach
from mmfreeze.freeze.engine import FrozenSetResult
from mmfreeze.freeze.summary import summarize_frozen
from mmfreeze.boundary.releases import INTEGRATION_RELEASES, MISREAD_BEFORE_07
from mmfreeze.models.loader import LoadedStructure
from mmfreeze.reachability.recipe import recipe_reach
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.labels import group_names, parameter_labeller
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.resolver.resolve import resolve_structure

if TYPE_CHECKING:
    from mmfreeze.recipes.recipe import Recipe


def explain_recipe(
    recipe: Recipe, loaded: LoadedStructure, frozen: FrozenSetResult, *, rank_uniform: Collection[str] = (),
    world: WorldSize | None = None, teacher: Callable[[], Teacher | None] = lambda: None,
) -> dict[str, Any]:
    """The whole explanation: model, resolved multimodal modules, what is frozen, the rates, the FSDP plan,
    and per-rank memory at ``world`` ranks (``None``: no world size known, none computed).

    ``loaded``: the recipe's model structure, probed (``ModelRequest.probe``); ``frozen``: what the recipe
    trains on it (:meth:`mmfreeze.workspace.Workspace.frozen_set`); ``rank_uniform``: modalities the data side
    guarantees every rank executes in every step; ``teacher``: builds a distillation recipe's teacher, whose
    parameters the memory section counts.
    """
    overrides = override_specs(recipe.module_overrides)
    inventory = resolve_structure(frozen.structure, override_specs=overrides)  # LoRA already injected there
    return {
        **explain_model(recipe, loaded),
        "multimodal_modules": explain_inventory(inventory),
        "language_model": {
            "parts": dict(inventory.language_model.parts),
            "tied_lm_head": inventory.language_model.tied_lm_head,
            "parameters": inventory.language_model.numel,
        },
        "freezing": {
            **explain_freezing(frozen, inventory),
            "lora_adapter_tensors": len(frozen.structure.parameters) - len(loaded.structure.parameters),
        },
        "rates": explain_rates(frozen, inventory),
        "reachability": explain_reach(
            recipe_reach(recipe.document, frozen.structure, frozen.frozen, group_of=parameter_labeller(inventory),
                         source=recipe.display_path),
            frozen.structure, inventory, recipe.distributed),
        "distributed": explain_distributed(
            recipe, loaded, frozen, override_specs=overrides, rank_uniform=rank_uniform
        ),
        "nemo_automodel": explain_native(recipe, frozen.vocabulary),
        "memory": explain_memory(recipe, frozen, world, loaded, teacher),
    }


def explain_native(recipe: Recipe, vocabulary: str) -> dict[str, Any]:
    """Whether nemo-automodel 0.7 runs the recipe as it is or needs ``mmfreeze.nemo``, and why."""
    support = native_support(recipe.framework_document)
    needs = support.verdict == "needs the integration"
    return {
        "verdict": support.verdict,
        "keys": list(support.keys),
        "integration_releases": list(INTEGRATION_RELEASES),
        "hazard_before_0_7": MISREAD_BEFORE_07 if needs and vocabulary == "new" else None,
    }


def explain_model(recipe: Recipe, loaded: LoadedStructure) -> dict[str, Any]:
    """Which class, from which config, how large."""
    structure = loaded.structure
    return {
        "recipe": recipe.display_path,
        "model_id": recipe.model.model_id,
        "target": recipe.model.target,
        "auto_class": recipe.model.auto_class,
        "architecture": structure.class_name,
        "architecture_module": structure.class_module,
        "config_source": {
            "kind": loaded.source.kind,
            "location": loaded.source.location,
            "provenance": loaded.source.provenance,
        },
        "parameters": structure.total_numel,
        "parameter_tensors": len(structure.parameters),
        "tied_aliases": sum(len(info.aliases) for info in structure.parameters),
    }


def explain_inventory(inventory: ResolvedInventory) -> list[dict[str, Any]]:
    """Each module's spec (path, modality, role, conditionally_executed), its parameters and where it came from."""
    return [{**asdict(info.spec), "parameters": info.numel, "source": info.source} for info in inventory.modules]


def explain_freezing(frozen: FrozenSetResult, inventory: ResolvedInventory) -> dict[str, Any]:
    trainable = [info for info in frozen.structure.parameters if info.name not in frozen.frozen]
    return {
        "vocabulary": frozen.vocabulary,
        "framework": frozen.rules.describe(),
        "framework_release": frozen.rules.release,
        "framework_reason": frozen.rules.reason,
        "frozen_tensors": len(frozen.frozen),
        "frozen_parameters": frozen.frozen_numel,
        "trainable_tensors": len(trainable),
        "trainable_parameters": sum(info.numel for info in trainable),
        "groups": [
            {
                "group": group.group,
                "path": group.path,
                "state": group.state,
                "frozen_tensors": group.frozen_tensors,
                "tensors": group.tensors,
                "frozen_parameters": group.frozen_numel,
                "parameters": group.numel,
            }
            for group in summarize_frozen(inventory, frozen.structure, frozen.frozen)
        ],
    }


def explain_rates(frozen: FrozenSetResult, inventory: ResolvedInventory) -> list[dict[str, Any]]:
    """The trainable tensors outside the base rate, by ``(lr_mult, wd_mult)`` and resolved module."""
    numel_of = {info.name: info.numel for info in frozen.structure.parameters}
    return [
        {"lr_mult": lr_mult, "wd_mult": wd_mult, "modules": [
            {"module": group.label, "tensors": group.tensors, "parameters": group.parameters}
            for group in group_names(names, numel_of=numel_of, group_of=parameter_labeller(inventory))]}
        for (lr_mult, wd_mult), names in sorted(frozen.rates.items())
    ]
