"""The guard at step 0 on torch's public hooks: any training loop, no seam of the loop's own.

Armed once per process (:func:`arm_step_zero`), it needs nothing from the code that trains:

- while no optimizer has stepped, torch's global module forward hooks record the outermost module
  of every forward (the model a loss is computed from; a teacher; a pipeline stage);
- before the first step of each optimizer (``register_optimizer_step_pre_hook``), the model it
  trains is the recorded module that holds its parameters, and :func:`verify_frozen_set` checks
  that model and that optimizer against the recipe's snapshot, on every rank. A mismatch raises
  out of ``optimizer.step()``, so no weight changes; every rank stops (the guard shares verdicts).
- every other recorded module holding parameters no optimizer trains (a distillation teacher)
  must be frozen whole: a trainable parameter there gets gradients and is never updated.
- a process whose modules ran but that never stepped an optimizer (a distillation teacher on its own
  mesh) trained nothing; at a normal exit it says so in one line, with whether what ran there is
  frozen whole (without an optimizer, a parameter marked trainable is never updated).

The forward hooks are removed at the first step; the step hook then costs one set look-up per step.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import FrozenSetMismatchError, IntegrationError

if TYPE_CHECKING:
    from mmfreeze.guard.locate import RecipeRef


@dataclass(frozen=True, kw_only=True)
class StepZeroGuard:
    """What the guard checks a run against."""

    recipe: RecipeRef
    """The recipe file whose snapshot the run must equal."""
    gradients: bool = False
    """Also require a gradient on every trainable parameter (the first backward has run by then)."""
    stage: bool = False
    """Each model is one pipeline stage: checked against the snapshot names it holds."""
    say: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    """Where the verdict line goes: stderr, not logging (nemo-automodel's RankFilter silences
    logging on every rank but 0, and each rank's verdict belongs in its own log)."""


GuardSource = StepZeroGuard | Callable[[], "StepZeroGuard | None"]
"""A guard, or what makes it at the first step (``None`` there: the run turned the guard off)."""


@dataclass(kw_only=True)
class ArmedGuard:
    """The hooks of one armed guard (:meth:`disarm` removes them)."""

    source: GuardSource
    roots: list[weakref.ref] = field(default_factory=list)
    checked: weakref.WeakSet = field(default_factory=weakref.WeakSet)
    """The optimizers verified so far (each once, before its first step)."""
    handles: list[Any] = field(default_factory=list)
    forward_handles: list[Any] = field(default_factory=list)
    depth: threading.local = field(default_factory=threading.local)
    stepped: bool = False
    """An optimizer stepped in this process (the optimizers themselves may be gone by exit)."""

    def disarm(self) -> None:
        for handle in [*self.forward_handles, *self.handles]:
            handle.remove()
        self.forward_handles.clear()
        self.handles.clear()
        atexit.unregister(self.at_exit)

    def at_exit(self) -> None:
        """At a normal exit of a process whose modules ran and that stepped no optimizer (a distillation
        teacher's rank on its own mesh, an evaluation): one line saying that it trained nothing."""
        if self.stepped or getattr(sys, "last_value", None) is not None:
            return  # checked at the first step, or the run failed and its own error says why
        roots = [module for ref in self.roots if (module := ref()) is not None and any(True for _ in module.parameters())]
        if not roots:
            return  # nothing with parameters ran: a data or compile worker
        guard = self.source if isinstance(self.source, StepZeroGuard) else self.source()
        if guard is None:
            return
        rank, world_size = _rank()
        parameters = [p for module in roots for p in module.parameters()]
        trainable = sum(p.requires_grad for p in parameters)
        state = (f", frozen whole ({len(parameters)} tensors)" if not trainable else
                 f" ({trainable} of {len(parameters)} tensors marked trainable, none held by an optimizer)")
        guard.say(f"mmfreeze guard: rank {rank} of {world_size} stepped no optimizer; "
                  f"{', '.join(sorted({type(module).__name__ for module in roots}))} ran here{state}: "
                  "this rank trained nothing")


def arm_step_zero(guard: GuardSource) -> ArmedGuard:
    """Arm ``guard`` in this process through torch's global hooks; returns what disarms it. Cheap
    until the first step: nothing is read or imported before then."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    armed = ArmedGuard(source=guard)

    def entered(module: Any, args: Any) -> None:
        depth = getattr(armed.depth, "value", 0)
        if depth == 0 and not any(ref() is module for ref in armed.roots):
            armed.roots.append(weakref.ref(module))
        armed.depth.value = depth + 1

    def left(module: Any, args: Any, output: Any) -> None:
        armed.depth.value = max(getattr(armed.depth, "value", 1) - 1, 0)

    def before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if optimizer in armed.checked:
            return
        for handle in armed.forward_handles:  # the models are known by the first step
            handle.remove()
        armed.forward_handles.clear()
        armed.stepped = True
        _check(armed, optimizer)
        armed.checked.add(optimizer)

    armed.forward_handles += [register_module_forward_pre_hook(entered),
                              register_module_forward_hook(left, always_call=True)]
    armed.handles.append(register_optimizer_step_pre_hook(before_step))
    atexit.register(armed.at_exit)
    return armed


def _check(armed: ArmedGuard, optimizer: Any) -> None:
    from mmfreeze.guard.verify import verify_frozen_set  # at the first step only: arming stays cheap

    guard = armed.source if isinstance(armed.source, StepZeroGuard) else armed.source()
    if guard is None:
        armed.disarm()
        return
    armed.source = guard
    roots = [module for ref in armed.roots if (module := ref()) is not None]
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    model = _model_of(roots, held, guard)
    verified = verify_frozen_set(model, guard.recipe, optimizer=optimizer, gradients=guard.gradients,
                                 stage=guard.stage)
    _check_untrained(roots, model, held, guard)
    guard.say(
        f"mmfreeze guard: rank {verified.rank or 0} of {verified.world_size}: {verified.recipe} matches its snapshot "
        f"({verified.trainable_tensors} trainable, {verified.frozen_tensors} frozen tensors"
        f"{', this pipeline stage' if guard.stage else ''}; optimizer checked"
        f"{'; every trainable parameter got a gradient' if verified.gradients_checked else ''})")


def _label(guard: StepZeroGuard) -> str:
    from mmfreeze.guard.locate import recipe_label

    return recipe_label(guard.recipe)


def _model_of(roots: list[Any], held: set[int], guard: StepZeroGuard) -> Any:
    """The outermost module whose forward ran and that holds every parameter the optimizer holds."""
    holders = [module for module in roots if held <= {id(p) for p in module.parameters()}]
    if not holders:
        raise IntegrationError(
            f"the guard cannot tell which model this optimizer trains: no module whose forward ran before its "
            f"first step holds its {len(held)} parameters ({len(roots)} modules ran). Call "
            "mmfreeze.verify_frozen_set(model, recipe, optimizer=...) yourself before the first step",
            source=_label(guard), key="mmfreeze.guard")
    return min(holders, key=lambda module: sum(1 for _ in module.parameters()))


def _check_untrained(roots: list[Any], model: Any, held: set[int], guard: StepZeroGuard) -> None:
    """A module that ran beside the model (a teacher) with parameters no optimizer holds must be frozen whole."""
    inside = {id(p) for p in model.parameters()}
    for module in roots:
        own = [(name, p) for name, p in module.named_parameters() if id(p) not in inside and id(p) not in held]
        trainable = [name for name, p in own if p.requires_grad]
        if own and len(own) == sum(1 for _ in module.parameters()) and trainable:
            raise FrozenSetMismatchError(
                f"{type(module).__name__} ran beside the model and no optimizer holds its parameters, yet "
                f"{len(trainable)} of them are trainable (first: {', '.join(trainable[:3])}): a distillation "
                "teacher must be frozen whole", source=_label(guard))


def _rank() -> tuple[int, int]:
    """This process's rank and world size: the process group's, else (after it was destroyed, at
    exit) torchrun's environment."""
    from mmfreeze.guard.ranks import current_ranks

    if (context := current_ranks()) is not None:
        return context.rank, context.world_size
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
