"""What a launched process does (`mmfreeze train`, :mod:`mmfreeze.nemo.activation`): arm the guard
when torch's optimizers are imported, and patch the framework, only where the recipe needs it, when
nemo-automodel is imported. Importing this module imports neither torch nor the framework.

- After ``torch.optim.optimizer`` runs: the step-0 guard's hooks (:func:`arm_step_zero`), which read
  the recipe at the first optimizer step. A process that never steps an optimizer (a compile
  worker, a data tool) pays three hook registrations and nothing else.
- After ``nemo_automodel`` runs (before it reads any recipe): ``install(recipe, guard=False)``,
  which replaces only what this recipe needs (most need nothing).

A process that cannot do either exits at once (code 3) with the reason: an exception in an import
hook would otherwise be reported and the run would go on unguarded.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mmfreeze.boundary.names import PACKAGE

ACTIVATE_ENV = "MMFREEZE_NEMO_INSTALL"
RECIPE_ENV = "MMFREEZE_NEMO_RECIPE"
"""The recipe a launched run trains."""
GUARD_ENV = "MMFREEZE_NEMO_GUARD"
"""``0`` turns the guard off for the run (``--no-guard``); unset, the recipe's ``mmfreeze.guard`` decides."""
PREFIX_ENV = "MMFREEZE_NEMO_PREFIX"
"""The launch's ``sys.prefix``: interpreters of other environments are left alone."""
GUARD_MODULE = "torch.optim.optimizer"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback once a named module has executed (then steps out of the import system)."""

    def __init__(self, callbacks: dict[str, Callable[[], None]]) -> None:
        self.callbacks = callbacks

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self.callbacks:
            return None
        spec = next((found for finder in sys.meta_path if finder is not self and hasattr(finder, "find_spec")
                     if (found := finder.find_spec(name, path, target)) is not None), None)
        if spec is None or spec.loader is None:
            return spec  # the other finders' answer (an editable install's own finder included)
        loader, callback = spec.loader, self.callbacks.pop(name)
        if not self.callbacks:
            sys.meta_path.remove(self)

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                _or_exit(callback)

        spec.loader = Loader()
        return spec


def activate(environ: dict[str, str] | None = None) -> None:
    """Set the hooks for the recipe ``$MMFREEZE_NEMO_RECIPE`` names."""
    environ = dict(os.environ if environ is None else environ)
    recipe = Path(environ.get(RECIPE_ENV, ""))
    guard_off = environ.get(GUARD_ENV) == "0"
    callbacks: dict[str, Callable[[], None]] = {PACKAGE: lambda: _install(recipe)}
    if not guard_off:
        callbacks[GUARD_MODULE] = lambda: _arm(recipe)
    for name in list(callbacks):
        if name in sys.modules:  # imported before this process's hooks: act now
            _or_exit(callbacks.pop(name))
    if callbacks:
        sys.meta_path.insert(0, _AfterImport(callbacks))


def _arm(recipe: Path) -> None:
    from mmfreeze.guard.step_zero import arm_step_zero

    arm_step_zero(lambda: _guard_for(recipe))


def _guard_for(recipe: Path) -> Any:
    from mmfreeze.guard.step_zero import StepZeroGuard
    from mmfreeze.nemo.context import read_run_context

    context = read_run_context(recipe)
    if not context.guard:
        return None
    return StepZeroGuard(recipe=context.recipe_file, gradients=context.gradients, stage=context.pipeline_stages)


def _install(recipe: Path) -> None:
    from mmfreeze.nemo.installation import install

    install(recipe, guard=False)


def _or_exit(callback: Callable[[], None]) -> None:
    from mmfreeze.exceptions import MmfreezeError

    try:
        callback()
    except MmfreezeError as error:
        print(f"mmfreeze train: {error}", file=sys.stderr, flush=True)
        os._exit(3)
