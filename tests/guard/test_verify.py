"""verify_frozen_set on real models: bundled recipes on meta, mmfreeze's and the framework's LoRA, wrappers."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

import mmfreeze
from mmfreeze.exceptions import FrozenSetMismatchError, MmfreezeError
from mmfreeze.freeze.apply import apply_freeze_config
from mmfreeze.guard import VerifiedFrozenSet, verify_frozen_set
from mmfreeze.recipes.recipe import load_recipe
from tests.guard.helpers import (
    FINETUNE,
    FRAMEWORK_LORA,
    LORA,
    REPO,
    TINY_FREEZE,
    committed_snapshot,
    named,
    recipe_on_meta,
    trainable_parameters,
    write_snapshot,
)

FROZEN_VISION = "model.visual.patch_embed.proj.weight"
TRAINED_LM = "model.language_model.layers.0.mlp.up_proj.weight"


def mismatch(model, recipe, **kwargs) -> FrozenSetMismatchError:
    with pytest.raises(FrozenSetMismatchError) as caught:
        verify_frozen_set(model, recipe, **kwargs)
    return caught.value


def test_meta_model_of_a_bundled_recipe_matches_its_committed_snapshot(finetune):
    optimizer = torch.optim.AdamW(trainable_parameters(finetune.model))

    result = mmfreeze.verify_frozen_set(finetune.model, FINETUNE, optimizer=optimizer)

    assert result == VerifiedFrozenSet(
        recipe=FINETUNE, snapshot=Path("snapshots") / f"{FINETUNE}.frozen.txt", tensors=729, frozen_tensors=390,
        trainable_tensors=339, optimizer_checked=True, rank=None, world_size=1, ranks_compared=False,
    )


def test_a_parsed_recipe_finds_the_same_snapshot(finetune):
    assert verify_frozen_set(finetune.model, finetune.recipe).snapshot == Path("snapshots") / f"{FINETUNE}.frozen.txt"


def test_one_tampered_parameter_is_caught_by_name_under_its_module(finetune):
    named(finetune.model, FROZEN_VISION).requires_grad_(True)

    error = mismatch(finetune.model, FINETUNE)

    difference = error.details.local.difference
    assert difference.newly_trainable == (FROZEN_VISION,) and not difference.newly_frozen
    headline = f"{FINETUNE}: the live model does not match the accepted snapshot snapshots/{FINETUNE}.frozen.txt\n"
    assert str(error).startswith(headline)
    assert ("  newly trainable (frozen in the snapshot, trainable here): 1 tensor / 1.51M parameters\n"
            "    model.visual (vision tower): 1 tensor / 1.51M parameters\n"
            f"      {FROZEN_VISION}\n") in str(error)
    assert f"mmfreeze snapshot --update {FINETUNE}" in str(error)


def test_a_parameter_frozen_behind_the_recipe_is_newly_frozen(finetune):
    named(finetune.model, TRAINED_LM).requires_grad_(False)

    error = mismatch(finetune.model, FINETUNE)

    assert error.details.local.difference.newly_frozen == (TRAINED_LM,)
    assert f"    language model: model.language_model.layers: 1 tensor / 67.9M parameters\n      {TRAINED_LM}" in str(error)


def test_optimizer_holding_a_frozen_parameter_is_caught_by_name(finetune):
    optimizer = torch.optim.AdamW([*trainable_parameters(finetune.model), named(finetune.model, FROZEN_VISION)])

    error = mismatch(finetune.model, FINETUNE, optimizer=optimizer)

    findings = error.details.local.optimizer
    assert findings.holds_frozen == (FROZEN_VISION,) and not findings.misses_trainable
    assert error.details.local.difference.empty
    assert "  optimizer holds frozen parameters: 1 tensor / 1.51M parameters\n" in str(error)
    assert f"      {FROZEN_VISION}\n" in str(error)


def test_optimizer_missing_a_trainable_parameter_is_caught_by_name(finetune):
    lm_layer = named(finetune.model, TRAINED_LM)
    optimizer = torch.optim.AdamW([p for p in trainable_parameters(finetune.model) if p is not lm_layer])

    error = mismatch(finetune.model, FINETUNE, optimizer=optimizer)

    assert error.details.local.optimizer.misses_trainable == (TRAINED_LM,)
    assert "  optimizer misses trainable parameters: 1 tensor / 67.9M parameters" in str(error)
    assert f"      {TRAINED_LM}\n" in str(error)


def test_a_parameter_held_twice_is_caught_by_name_within_and_across_groups(finetune):
    trainable = trainable_parameters(finetune.model)
    lm_layer = named(finetune.model, TRAINED_LM)
    with pytest.warns(UserWarning, match="duplicate parameters"):  # torch only warns within a group
        optimizer = torch.optim.SGD([*trainable, lm_layer], lr=0.1)
    optimizer.param_groups.append({**optimizer.param_groups[0], "params": [named(finetune.model, "lm_head.weight")]})

    findings = mismatch(finetune.model, FINETUNE, optimizer=optimizer).details.local.optimizer

    assert [(held.name, held.groups) for held in findings.held_twice] == [
        ("lm_head.weight", (0, 1)), (TRAINED_LM, (0, 0)),
    ]
    assert not (findings.holds_frozen or findings.misses_trainable or findings.foreign)


THREE_RATES = "example_configs/vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2_three_rates.yaml"
"""The same Qwen2.5-VL-7B, everything trainable: the ViT at 0.1x, the merger at 10x (roles)."""
THREE_RATES_ORIGINAL = REPO / "tests/migrate/fixtures/pre_migration/vlm_finetune/qwen2_5_vl" / Path(THREE_RATES).name
"""Its copy before `mmfreeze migrate`: the same rates as the framework's regex patterns."""


def test_the_guard_holds_each_tensors_rate_to_the_snapshot(finetune):
    """The framework's own grouping of the original regex overrides passes against the migrated
    recipe's snapshot; an optimizer without the overrides is caught, tensor by tensor."""
    from nemo_automodel.components.optim.optimizer import ParamGroupOverride, _build_param_groups

    for parameter in finetune.model.parameters():
        parameter.requires_grad_(True)
    entries = load_recipe(THREE_RATES_ORIGINAL).document["optimizer"]["param_group_overrides"]
    groups = _build_param_groups([(name, p) for name, p in finetune.model.named_parameters()],
                                 [ParamGroupOverride(**entry) for entry in entries])

    assert verify_frozen_set(finetune.model, THREE_RATES, optimizer=torch.optim.AdamW(groups)).optimizer_checked
    error = mismatch(finetune.model, THREE_RATES, optimizer=torch.optim.AdamW(trainable_parameters(finetune.model)))

    wrong = error.details.local.optimizer.wrong_rate
    assert len(wrong) == 390 and {found.snapshot for found in wrong} == {(0.1, 1.0), (10.0, 1.0)}
    assert "  optimizer trains tensors at another rate than the snapshot's: 390\n" in str(error)
    assert ("      model.visual.blocks.0.attn.proj.bias: lr_mult 1, wd_mult 1 here; the snapshot has lr_mult 0.1, "
            "wd_mult 1\n") in str(error)


def test_optimizer_built_on_replaced_parameters_holds_tensors_that_are_not_the_models(finetune):
    stale = torch.nn.Parameter(torch.empty(8, 4, device="meta"))
    optimizer = torch.optim.SGD([*trainable_parameters(finetune.model), stale], lr=0.1)

    error = mismatch(finetune.model, FINETUNE, optimizer=optimizer)

    assert error.details.local.optimizer.foreign == ("param_groups[0] item 339: shape (8, 4)",)
    assert "optimizer holds tensors that are not parameters of this model: 1" in str(error)


def test_mmfreeze_live_lora_adapters_match_the_lora_recipes_snapshot(lora):
    result = verify_frozen_set(lora.model, LORA, optimizer=torch.optim.AdamW(trainable_parameters(lora.model)))

    adapters = sum("lora_" in name for name, _ in lora.model.named_parameters())
    assert adapters == 4 * 28 * 2 and result.trainable_tensors == adapters


def test_lora_recipe_without_injected_adapters_fails_on_the_tensor_count(monkeypatch):
    monkeypatch.chdir(REPO)
    uninjected = recipe_on_meta(LORA, inject_lora=False)

    error = mismatch(uninjected.model, LORA)

    difference = error.details.local.difference
    assert not (difference.newly_frozen or difference.newly_trainable or difference.missing)
    assert (difference.snapshot_tensors, difference.model_tensors) == (729 + 224, 729)
    assert "parameter tensors: 953 in the snapshot's model, 729 here" in str(error)


def test_the_frameworks_own_lora_and_trainability_pass_against_the_committed_snapshot(monkeypatch):
    """nemo-automodel's apply_lora_to_linear_modules and _apply_trainability_policy on the real
    recipe model: the snapshot mmfreeze computed holds for the model the framework sets up."""
    from tests.framework.oracle import framework_trainability

    monkeypatch.chdir(REPO)
    built = recipe_on_meta(FRAMEWORK_LORA, inject_lora=False)
    for parameter in built.model.parameters():
        parameter.requires_grad_(True)  # as built: the framework decides everything from here
    framework_trainability(built.model, built.recipe.freeze_config, built.recipe.peft)

    optimizer = torch.optim.AdamW(trainable_parameters(built.model))
    result = verify_frozen_set(built.model, built.recipe, optimizer=optimizer)

    assert result.tensors == 1000 and result.trainable_tensors == 340
    assert all("lora_" in name for name, p in built.model.named_parameters() if p.requires_grad)


def _tiny_llava_with_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> torch.nn.Module:
    from tests.distributed.tiny_vlms import build_tiny

    monkeypatch.chdir(tmp_path)
    model = build_tiny("llava")
    write_snapshot(model, {"freeze_config": TINY_FREEZE}, tmp_path, "recipes/tiny_llava.yaml")
    apply_freeze_config(model, TINY_FREEZE)  # the runtime freezing, not the engine that made the snapshot
    return model


def test_activation_checkpoint_and_compile_wrappers_do_not_change_names(tmp_path, monkeypatch):
    model = _tiny_llava_with_snapshot(tmp_path, monkeypatch)
    layers = model.model.language_model.layers
    for index, layer in enumerate(layers):
        layers[index] = checkpoint_wrapper(layer)
    compiled = torch.compile(model)
    assert any("_checkpoint_wrapped_module" in name for name, _ in compiled.named_parameters())

    optimizer = torch.optim.SGD(trainable_parameters(model), lr=0.1)

    result = verify_frozen_set(compiled, "recipes/tiny_llava.yaml", optimizer=optimizer)

    assert result.frozen_tensors == sum(1 for name, _ in model.named_parameters() if ".vision_tower." in name)


def test_wrapped_model_mismatch_is_reported_under_canonical_names_and_modules(tmp_path, monkeypatch):
    model = _tiny_llava_with_snapshot(tmp_path, monkeypatch)
    layers = model.model.language_model.layers
    layers[0] = checkpoint_wrapper(layers[0])
    layers[0].mlp.up_proj.weight.requires_grad_(False)

    error = mismatch(torch.compile(model), "recipes/tiny_llava.yaml")

    assert error.details.local.difference.newly_frozen == ("model.language_model.layers.0.mlp.up_proj.weight",)
    assert ("    language model: model.language_model.layers: 1 tensor / 2,048 parameters\n"
            "      model.language_model.layers.0.mlp.up_proj.weight") in str(error)


def test_snapshot_argument_overrides_the_default_lookup(finetune, tmp_path):
    moved = tmp_path / "elsewhere.frozen.txt"
    moved.write_text(committed_snapshot(FINETUNE).read_text())

    assert verify_frozen_set(finetune.model, FINETUNE, snapshot=moved).snapshot == moved


def test_errors_are_mmfreeze_errors_that_name_the_recipe(finetune):
    named(finetune.model, FROZEN_VISION).requires_grad_(True)

    error = mismatch(finetune.model, finetune.recipe)

    assert isinstance(error, MmfreezeError) and error.source == FINETUNE


def test_a_7b_model_on_meta_is_verified_well_under_a_second(finetune):
    """The issue's bound, with a wide margin (benchmarks/verify_cost.py measures about 20 ms)."""
    optimizer = torch.optim.AdamW(trainable_parameters(finetune.model))
    verify_frozen_set(finetune.model, FINETUNE, optimizer=optimizer)  # the first call imports the guard
    times = []
    for _ in range(3):
        started = time.perf_counter()
        verify_frozen_set(finetune.model, FINETUNE, optimizer=optimizer)
        times.append(time.perf_counter() - started)

    assert sorted(times)[1] < 0.5, times


def test_the_error_crosses_process_boundaries_with_its_message(finetune):
    named(finetune.model, FROZEN_VISION).requires_grad_(True)
    error = mismatch(finetune.model, FINETUNE)

    copied = pickle.loads(pickle.dumps(error))

    assert type(copied) is FrozenSetMismatchError and str(copied) == str(error)
    assert copied.source == FINETUNE and copied.details is None  # the structured report stays in its process


def test_with_gradients_a_trainable_parameter_the_loss_never_reached_is_named(tmp_path, monkeypatch):
    """Issue 25, item 4: after a text-only backward the trainable projector has no gradient (the
    image path never ran); after a backward with an image every trainable parameter has one."""
    from tests.distributed.tiny_vlms import build_batch

    model = _tiny_llava_with_snapshot(tmp_path, monkeypatch)
    model(**build_batch("llava", "text", seed=0)).loss.backward()

    error = mismatch(model, "recipes/tiny_llava.yaml", gradients=True)
    missing = error.details.local.missing_gradients
    assert missing and all(name.startswith("model.multi_modal_projector.") for name in missing)
    assert "  trainable, but no gradient after the backward (the loss never reached them): 4 tensors" in str(error)
    assert "run_dummy_forward: true" in str(error)

    model.zero_grad(set_to_none=True)
    model(**build_batch("llava", "image", seed=0)).loss.backward()
    assert verify_frozen_set(model, "recipes/tiny_llava.yaml", gradients=True).gradients_checked
