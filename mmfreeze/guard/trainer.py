"""The step-0 guard in transformers' ``Trainer``: a ``TrainerCallback`` (its seam for code that runs
with a training loop it does not own).

``trainer.add_callback(StepZeroCallback("recipes/team/qwen2_5_vl.yaml"))``: when training begins the
guard is armed (:mod:`mmfreeze.guard.step_zero`), so before the first optimizer step the model the
Trainer trains, and its optimizer's param groups, must equal the recipe's snapshot (made by
`mmfreeze snapshot`) on every rank; a mismatch raises out of that step and no weight changes.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from mmfreeze.guard.locate import RecipeRef
from mmfreeze.guard.step_zero import ArmedGuard, StepZeroGuard, arm_step_zero


class StepZeroCallback(TrainerCallback):
    """Check the run against ``recipe``'s snapshot before the first optimizer step."""

    def __init__(self, recipe: RecipeRef, *, gradients: bool = False) -> None:
        self.guard = StepZeroGuard(recipe=recipe, gradients=gradients)
        self.armed: ArmedGuard | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.armed is None:
            self.armed = arm_step_zero(self.guard)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.armed is not None:
            self.armed.disarm()
            self.armed = None
