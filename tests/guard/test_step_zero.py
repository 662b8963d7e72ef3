"""The step-0 guard on torch's public hooks (issue 41): a plain PyTorch loop and transformers'
``Trainer``, on a tiny real LLaVA (real weights on the CPU), against a snapshot mmfreeze computed
for the recipe's section. Nothing of the loop is patched: the guard finds the model from the
optimizer's parameters and the modules whose forward ran."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from mmfreeze.exceptions import FrozenSetMismatchError, IntegrationError
from mmfreeze.freeze.apply import apply_frozen_set
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.guard.step_zero import StepZeroGuard, arm_step_zero
from mmfreeze.models.structure import structure_of
from tests.guard.helpers import TINY_FREEZE, named, trainable_parameters, write_snapshot

TINY_CONFIG = Path(__file__).resolve().parents[1] / "nemo" / "models" / "tiny-llava"
RECIPE = "recipes/tiny.yaml"
FROZEN = "model.vision_tower.encoder.layers.0.mlp.fc1.weight"


def tiny_llava() -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForImageTextToText

    torch.manual_seed(0)
    return AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(TINY_CONFIG))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, torch.nn.Module]]:
    """A repository with the recipe's snapshot, and the tiny model frozen as the recipe says."""
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    model = tiny_llava()
    write_snapshot(model, {"freeze_config": TINY_FREEZE}, tmp_path, RECIPE)
    result = compute_frozen_set(structure_of(model), {"freeze_config": TINY_FREEZE}, source=RECIPE, override_specs=())
    apply_frozen_set(model, result.frozen)
    monkeypatch.chdir(tmp_path)
    yield tmp_path, model


def armed(root: Path, said: list[str]):
    return arm_step_zero(StepZeroGuard(recipe=Path(RECIPE), say=said.append))


def train_one_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    logits = model(input_ids=torch.tensor([[1, 5, 7, 9]])).logits
    logits.float().pow(2).mean().backward()
    optimizer.step()


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def test_a_plain_loop_that_matches_its_snapshot_trains_and_says_so(repo) -> None:
    root, model = repo
    said: list[str] = []
    guard = armed(root, said)
    try:
        optimizer = torch.optim.AdamW(trainable_parameters(model), lr=0.1)
        before = weights(model)
        train_one_step(model, optimizer)
        train_one_step(model, optimizer)
    finally:
        guard.disarm()
    assert said == ["mmfreeze guard: rank 0 of 1: recipes/tiny.yaml matches its snapshot (25 trainable, 39 frozen "
                    "tensors; optimizer checked)"], "checked once, before the first step"
    after = weights(model)
    assert torch.equal(before[FROZEN], after[FROZEN])
    assert not torch.equal(before["lm_head.weight"], after["lm_head.weight"])
    assert guard.forward_handles == [], "the forward hooks are gone after the first step"


def test_a_parameter_unfrozen_after_the_optimizer_was_built_stops_the_first_step_before_any_weight_moves(repo) -> None:
    root, model = repo
    guard = armed(root, [])
    try:
        optimizer = torch.optim.AdamW(trainable_parameters(model), lr=0.1)
        named(model, FROZEN).requires_grad_(True)
        before = weights(model)
        with pytest.raises(FrozenSetMismatchError) as caught:
            train_one_step(model, optimizer)
    finally:
        guard.disarm()
    assert "newly trainable" in str(caught.value) and FROZEN in str(caught.value)
    assert all(torch.equal(before[name], tensor) for name, tensor in weights(model).items())


def test_a_teacher_that_ran_beside_the_model_must_be_frozen_whole(repo) -> None:
    root, model = repo
    teacher = tiny_llava()
    guard = armed(root, [])
    try:
        optimizer = torch.optim.AdamW(trainable_parameters(model), lr=0.1)
        teacher(input_ids=torch.tensor([[1, 5, 7, 9]]))
        with pytest.raises(FrozenSetMismatchError, match="a distillation teacher must be frozen whole"):
            train_one_step(model, optimizer)
    finally:
        guard.disarm()
    teacher.requires_grad_(False)
    guard = armed(root, said := [])
    try:
        teacher(input_ids=torch.tensor([[1, 5, 7, 9]]))
        train_one_step(model, torch.optim.AdamW(trainable_parameters(model), lr=0.1))
    finally:
        guard.disarm()
    assert len(said) == 1


RANK_WITHOUT_OPTIMIZER = """
import sys, torch
from pathlib import Path
from mmfreeze.guard.step_zero import StepZeroGuard, arm_step_zero
arm_step_zero(StepZeroGuard(recipe=Path("recipes/kd.yaml")))
teacher = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
teacher.requires_grad_(sys.argv[1] == "trainable")
with torch.no_grad():
    teacher(torch.ones(1, 2))
if sys.argv[1] == "crashes":
    raise RuntimeError("the run failed before any step")
"""
"""A distillation teacher's rank on its own mesh: its model runs forwards, no optimizer ever steps."""


@pytest.mark.parametrize("teacher", ["frozen", "trainable", "crashes"])
def test_a_process_that_ran_modules_and_stepped_no_optimizer_says_at_exit_that_it_trained_nothing(
    teacher: str, tmp_path: Path,
) -> None:
    """One line, with whether what ran is frozen whole; the exit code stays the run's. A run that
    failed on its own gets no line: its error says why."""
    ran = subprocess.run([sys.executable, "-c", RANK_WITHOUT_OPTIMIZER, teacher], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    lines = [line for line in ran.stderr.splitlines() if line.startswith("mmfreeze guard:")]
    if teacher == "frozen":
        assert ran.returncode == 0, ran.stderr
        assert lines == ["mmfreeze guard: rank 0 of 1 stepped no optimizer; Sequential ran here, frozen whole "
                         "(4 tensors): this rank trained nothing"]
    elif teacher == "trainable":
        assert ran.returncode == 0, ran.stderr
        assert lines == ["mmfreeze guard: rank 0 of 1 stepped no optimizer; Sequential ran here (4 of 4 tensors "
                         "marked trainable, none held by an optimizer): this rank trained nothing"]
    else:
        assert ran.returncode == 1 and "the run failed before any step" in ran.stderr
        assert lines == []


def test_an_optimizer_over_a_module_whose_forward_never_ran_is_an_error_not_a_pass(repo) -> None:
    root, _ = repo
    guard = armed(root, [])
    try:
        stray = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(stray.parameters(), lr=0.1)
        with pytest.raises(IntegrationError, match="cannot tell which model this optimizer trains"):
            optimizer.step()
    finally:
        guard.disarm()


def test_the_trainer_callback_passes_a_matching_run_and_stops_one_unfrozen_after_setup(repo) -> None:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from mmfreeze.guard.trainer import StepZeroCallback

    root, model = repo

    class Batches(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
            ids = torch.tensor([1, 5, 7, 9 + index])
            return {"input_ids": ids, "labels": ids}

    def trainer(*callbacks: TrainerCallback) -> Trainer:
        args = TrainingArguments(output_dir=str(root / "out"), max_steps=2, per_device_train_batch_size=2,
                                 report_to=[], save_strategy="no", use_cpu=True, learning_rate=0.1)
        return Trainer(model=model, args=args, train_dataset=Batches(), callbacks=[StepZeroCallback(RECIPE), *callbacks])

    before = weights(model)
    trainer().train()
    assert not torch.equal(before["lm_head.weight"], named(model, "lm_head.weight"))
    assert torch.equal(before[FROZEN], named(model, FROZEN))

    class UnfreezeAfterSetup(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs) -> None:
            named(kwargs["model"], FROZEN).requires_grad_(True)

    before = weights(model)
    with pytest.raises(FrozenSetMismatchError, match="newly trainable"):
        trainer(UnfreezeAfterSetup()).train()
    assert torch.equal(before[FROZEN], named(model, FROZEN))
