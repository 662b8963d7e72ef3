"""The guard where training starts: before the first optimizer step, on every rank.

Every recipe builds its optimizers with ``OptimizerConfig.build(model, ...)`` (one per model part),
after the model is built, parallelised and loaded. The integration arms each one
(:mod:`mmfreeze.nemo.optimizer`) with a step pre-hook that runs once:
:func:`mmfreeze.verify_frozen_set` on the model with that optimizer, its rates included. A
mismatch raises out of ``optimizer.step()`` on every rank (the guard shares verdicts through the
process group's store), so the run stops before any weight changes.
"""

from __future__ import annotations

import sys
from typing import Any

from mmfreeze.exceptions import IntegrationError
from mmfreeze.guard.verify import verify_frozen_set
from mmfreeze.nemo.context import GUARD_KEY, SETTINGS_KEY, RunContext


def guarded_part(model: Any, context: RunContext) -> Any | None:
    """The model the guard checks for this run, or ``None`` when it is off; an error when it cannot run."""
    if not context.guard:
        return None
    if context.recipe is None:
        raise IntegrationError(
            "the guard needs the recipe file to find its snapshot: mmfreeze.nemo.install(recipe=...), "
            f"or launch with `mmfreeze train`; or turn it off with `{SETTINGS_KEY}: {{{GUARD_KEY}: false}}`",
            key=f"{SETTINGS_KEY}.{GUARD_KEY}")
    parts = list(getattr(model, "parts", [model]))
    if len(parts) != 1:
        raise IntegrationError(
            f"the guard checks a whole model, and this run has {len(parts)} pipeline stages; turn it off "
            f"with `{SETTINGS_KEY}: {{{GUARD_KEY}: false}}`", source=context.source, key=f"{SETTINGS_KEY}.{GUARD_KEY}")
    return parts[0]


ARMED = "_mmfreeze_guard_armed"


def arm_guard(optimizer: Any, model: Any, context: RunContext) -> None:
    """Run the guard once, just before ``optimizer``'s first step (armed once per optimizer)."""
    if getattr(optimizer, ARMED, False):
        return
    setattr(optimizer, ARMED, True)

    def check_before_first_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        handle.remove()
        verified = verify_frozen_set(model, context.recipe_file, optimizer=optimizer, gradients=context.gradients)
        # Written to stderr, not logged: nemo-automodel's RankFilter disables logging on every rank
        # but 0 for the whole process, and each rank's verdict belongs in its own log.
        print(
            f"mmfreeze guard: rank {verified.rank or 0} of {verified.world_size}: {context.source} matches its "
            f"snapshot ({verified.trainable_tensors} trainable, {verified.frozen_tensors} frozen tensors; optimizer "
            f"{'checked' if verified.optimizer_checked else 'not checked'}"
            f"{'; every trainable parameter got a gradient' if verified.gradients_checked else ''})",
            file=sys.stderr, flush=True)

    handle = optimizer.register_step_pre_hook(check_before_first_step)
