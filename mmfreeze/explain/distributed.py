"""The distributed part of `mmfreeze explain`: the FSDP plan the policy gives, on the meta model.

The recipe's model is built on meta, LoRA adapters are injected and freezing applied as training
would, so the policy reads the same live `requires_grad` it would read before sharding. The mesh
comes from the recipe's dp / tp / cp sizes; the batch contract is the data side's declaration
(conservative unless the caller says a modality runs on every rank).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mmfreeze.distributed import build_mesh_description, parse_multimodal_config, plan_multimodal_fsdp
from mmfreeze.distributed.batch_contract import parse_batch_contract
from mmfreeze.distributed.legacy_keys import multimodal_section
from mmfreeze.distributed.native import split_framework_keys
from mmfreeze.exceptions import DistributedConfigError
from mmfreeze.freeze.apply import apply_frozen_set
from mmfreeze.freeze.engine import FrozenSetResult
from mmfreeze.models.lora import add_live_lora_adapters, lora_targets, parse_peft_section
from mmfreeze.models.loader import LoadedStructure, build_requested_model
from mmfreeze.resolver import MultimodalModuleSpec, resolve_multimodal_modules

if TYPE_CHECKING:
    from mmfreeze.recipes.recipe import Recipe

NO_POLICY = ("none of mmfreeze's keys in this recipe: the framework shards it with its own FSDP2 plan, "
             "and mmfreeze checks nothing at setup")
UNSPECIFIED_DP = 2
"""Planning stand-in when `dp_size` is left to launch time: any size above 1 validates the same."""


def explain_distributed(
    recipe: Recipe, loaded: LoadedStructure, frozen: FrozenSetResult, *,
    override_specs: Sequence[MultimodalModuleSpec], rank_uniform: Collection[str] = (),
) -> dict[str, Any]:
    """The plan (or the rejection) for the recipe's `distributed.multimodal` additions, with its
    inputs. A recipe without any has no plan to show (the integration leaves its sharding to the
    framework), unless ``rank_uniform`` asks what one with that batch contract would give.

    ``loaded``: the recipe's model structure; ``override_specs``: its `multimodal.modules` overrides.
    """
    section, notes = multimodal_section(recipe.distributed)
    if not split_framework_keys(section)[1] and not rank_uniform:
        return {"verdict": "none", "reason": NO_POLICY, "notes": list(notes)}
    model = build_requested_model(loaded.request, loaded.source)
    if recipe.peft is not None:
        spec = parse_peft_section(recipe.peft, source=recipe.display_path)
        add_live_lora_adapters(model, lora_targets(loaded.structure, spec, frozen.rules.release), spec)
    apply_frozen_set(model, frozen.frozen)
    resolved = resolve_multimodal_modules(model, override_specs=override_specs)
    mesh, mesh_notes = _mesh(recipe.distributed or {})
    summary: dict[str, Any] = {"mesh": mesh.describe()}
    try:
        contract = parse_batch_contract(section, source=recipe.display_path).with_uniform(
            rank_uniform, declared_by="mmfreeze explain --rank-uniform")
        summary["batch_contract"] = {"rank_uniform": sorted(contract.rank_uniform_modalities),
                                     "declared_by": contract.declared_by}
        config = parse_multimodal_config(
            section, known_modalities={r.spec.modality for r in resolved}, source=recipe.display_path
        )
        plan = plan_multimodal_fsdp(model, resolved, config=config, contract=contract, mesh=mesh)
    except DistributedConfigError as error:
        return {**summary, "verdict": "rejected", "error": error.message, "notes": [*notes, *mesh_notes]}
    described = plan.describe()
    described["notes"] = [*notes, *mesh_notes, *described["notes"]]
    return {**summary, **described}


def _mesh(distributed: Mapping[str, Any]) -> tuple[Any, list[str]]:
    sizes = {dim: distributed.get(f"{dim}_size") for dim in ("dp", "tp", "cp")}
    notes = []
    if not isinstance(sizes["dp"], int) or sizes["dp"] < 1:
        notes.append(f"dp_size is {sizes['dp']!r} (set at launch); planned with dp={UNSPECIFIED_DP}")
        sizes["dp"] = UNSPECIFIED_DP
    for dim in ("tp", "cp"):
        if not isinstance(sizes[dim], int) or sizes[dim] < 1:
            sizes[dim] = 1
    return build_mesh_description(**sizes), notes
