"""``install()``: make an unmodified nemo-automodel run what a recipe says that 0.7 cannot state, and
guard the run, with nothing patched that the recipe does not need.

A migrated recipe's freezing and rates are 0.7's own sections (`mmfreeze migrate`, rule MF006), so
most recipes need no patch at all: the guard arms through torch's public hooks
(:mod:`mmfreeze.guard.step_zero`), whatever builds the optimizer. The framework functions below
are replaced only for a recipe that needs them (:func:`mmfreeze.distributed.native.native_support`
names the keys; `mmfreeze explain` says which and why):

==============================================  =====================================================
hook points (group)                             what mmfreeze does there
==============================================  =====================================================
``parse_freeze_config`` (both), ``apply_        freeze: a `(modality, role)` section the compiler
parameter_freezing`` (both)                     could not state in 0.7's selectors (a parameter on
                                                the model's root), parsed and applied by mmfreeze
``optimizer._coerce_param_group_overrides``,    rates: `param_group_overrides` entries with a
``OptimizerConfig.build`` (and each override)   selector (``role:``, ``layers:``, ...), resolved on
                                                the model into the framework's own patterns
``_dist_utils.parse_distributed_section``,      distributed: mmfreeze's `distributed.multimodal`
``ModelParallelizer.parallelize``               additions, parsed apart and applied at the FSDP hook
==============================================  =====================================================
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.boundary.hook_points import (
    APPLY_DIRECT,
    APPLY_IN_POLICY,
    BUILD_OPTIMIZER,
    COERCE_OVERRIDES,
    HOOK_GROUPS,
    OPTIMIZER_CONFIGS_WITH_BUILD,
    PARALLELIZE,
    PARSE_AT_BUILD,
    PARSE_AT_RECIPE,
    PARSE_DISTRIBUTED,
    HookPoint,
)
from mmfreeze.boundary.names import OPTIMIZER
from mmfreeze.exceptions import IntegrationError
from mmfreeze.guard.step_zero import ArmedGuard, StepZeroGuard, arm_step_zero
from mmfreeze.nemo import distributed, freeze, rates
from mmfreeze.nemo.activate import RECIPE_ENV
from mmfreeze.nemo.context import GUARD_KEY, SETTINGS_KEY, RunContext, read_run_context
from mmfreeze.nemo.hooks import Patch, apply_patches, remove_patches
from mmfreeze.nemo.release import check_supported_release



@dataclass(frozen=True, kw_only=True)
class Installation:
    """The integration as installed in this process."""

    release: str
    """The nemo-automodel version it was installed into."""
    context: RunContext
    patches: tuple[Patch, ...]
    """Only the framework functions this recipe needs replaced (none for most recipes)."""
    guard: ArmedGuard | None
    """The step-0 guard's torch hooks; ``None`` when the recipe turned it off."""
    additions: distributed.ParsedAdditions
    """The `distributed.multimodal` additions of each parse of the distributed section."""

    def uninstall(self) -> None:
        """Put every framework function back and disarm the guard."""
        remove_patches(self.patches)
        if self.guard is not None:
            self.guard.disarm()
        _ACTIVE.remove(self)


_ACTIVE: list[Installation] = []
"""The installation of this process (at most one)."""


def install(recipe: str | os.PathLike[str] | None = None, *, guard: bool | None = None) -> Installation:
    """Install the integration into the installed nemo-automodel, once per process.

    - ``recipe``: the recipe this process trains (default: ``$MMFREEZE_NEMO_RECIPE``, which
      `mmfreeze train` sets). What it needs decides what is patched, and the guard compares the run
      with its snapshot. Without one, nothing is patched and the guard cannot run: pass ``guard=False``.
    - ``guard``: check the run against the snapshot before the first optimizer step; default: the
      recipe's ``mmfreeze.guard`` key, else true.

    Raises :class:`~mmfreeze.exceptions.IntegrationError` on an unsupported release, a missing hook
    point (nothing is patched then), a guard without a recipe, or a second install.
    """
    release = check_supported_release()
    if (current := installed()) is not None:
        raise IntegrationError(f"already installed (recipe: {current.context.recipe}); call uninstall() first",
                               key="mmfreeze.nemo")
    path = recipe if recipe is not None else os.environ.get(RECIPE_ENV) or None
    context = read_run_context(Path(path) if path is not None else None, guard=guard)
    if context.guard and context.recipe_file is None:
        raise IntegrationError(
            "the guard needs the recipe file to find its snapshot: mmfreeze.nemo.install(recipe=...), or launch "
            f"with `mmfreeze train`; or turn it off with `{SETTINGS_KEY}: {{{GUARD_KEY}: false}}`",
            key=f"{SETTINGS_KEY}.{GUARD_KEY}")
    if "rates" in context.needs:
        _check_every_optimizer_build_is_hooked()
    additions = distributed.ParsedAdditions()
    patches = apply_patches(_replacements(context, additions))
    armed = arm_step_zero(StepZeroGuard(recipe=context.recipe_file, gradients=context.gradients,
                                        stage=context.pipeline_stages)) if context.guard else None
    installation = Installation(release=release, context=context, patches=patches, guard=armed, additions=additions)
    _ACTIVE.append(installation)
    return installation


def installed() -> Installation | None:
    """The installation active in this process."""
    return _ACTIVE[0] if _ACTIVE else None


def _replacements(
    context: RunContext, parsed: distributed.ParsedAdditions,
) -> list[tuple[HookPoint, Callable[[Any], Any]]]:
    makers: dict[HookPoint, Callable[[Any], Any]] = {
        PARSE_AT_RECIPE: lambda original: freeze.parse_hook(original, context),
        PARSE_AT_BUILD: lambda original: freeze.parse_hook(original, context),
        APPLY_IN_POLICY: lambda original: freeze.apply_hook(original, context),
        APPLY_DIRECT: lambda original: freeze.apply_hook(original, context),
        PARSE_DISTRIBUTED: lambda original: distributed.parse_hook(original, context, parsed),
        PARALLELIZE: lambda original: distributed.parallelize_hook(original, context, parsed),
        COERCE_OVERRIDES: lambda original: rates.coerce_hook(original, context),
        **{point: (lambda original: rates.build_hook(original, context)) for point in BUILD_OPTIMIZER},
    }
    return [(point, makers[point]) for need in sorted(context.needs) for point in HOOK_GROUPS[need]]


def _check_every_optimizer_build_is_hooked() -> None:
    """An optimizer config class with a ``build`` of its own that the integration does not wrap
    would hand the framework selector rate entries it cannot read: refuse to install instead."""
    try:
        module = importlib.import_module(OPTIMIZER)
    except ImportError:
        return  # apply_patches reports the module itself
    pending, seen = [module.OptimizerConfig], []
    while pending:
        cls = pending.pop()
        seen.append(cls)
        pending.extend(cls.__subclasses__())
    unhooked = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in seen
                      if "build" in vars(cls) and cls.__qualname__ not in OPTIMIZER_CONFIGS_WITH_BUILD)
    if unhooked:
        raise IntegrationError(
            f"optimizer configs with a build() that cannot resolve selector rate entries: {', '.join(unhooked)}; "
            "nothing was patched",
            key="mmfreeze.nemo")


def uninstall() -> None:
    """Remove the integration from this process (a no-op when it is not installed)."""
    if (current := installed()) is not None:
        current.uninstall()
