"""`mmfreeze train -- COMMAND`: run the framework's own command line with the integration installed.

The framework's launcher (``automodel``) and the worker processes it starts through torchrun are
all separate Python interpreters, so the integration is installed in each at interpreter start:
the launch puts :data:`ACTIVATION_DIR` first on ``PYTHONPATH`` (its ``sitecustomize`` calls
``install()`` when :data:`ACTIVATE_ENV` is set, then runs any ``sitecustomize`` it shadows) and
names the recipe in :data:`~mmfreeze.nemo.installation.RECIPE_ENV`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mmfreeze.exceptions import IntegrationError, MmfreezeError
from mmfreeze.nemo.installation import RECIPE_ENV, install

ACTIVATION_DIR = Path(__file__).resolve().parent / "activation"
ACTIVATE_ENV = "MMFREEZE_NEMO_INSTALL"
GUARD_ENV = "MMFREEZE_NEMO_GUARD"
"""``0`` turns the guard off for the run (``--no-guard``); unset, the recipe's ``mmfreeze.guard`` decides."""
CONFIG_FLAGS = ("-c", "--config", "--config-path")
RECIPE_SUFFIXES = (".yaml", ".yml")


def find_recipe(command: Sequence[str]) -> Path:
    """The recipe file the framework's command line trains: a YAML value of ``-c``/``--config``, else
    the first argument naming an existing YAML file (``python -c CODE`` is not a recipe)."""
    for flag, value in zip(command, command[1:]):
        if flag in CONFIG_FLAGS and value.endswith(RECIPE_SUFFIXES):
            return _existing(Path(value), flag)
    for argument in command:
        value = argument.split("=", 1)[1] if argument.startswith(tuple(f"{f}=" for f in CONFIG_FLAGS)) else argument
        if value.endswith(RECIPE_SUFFIXES) and Path(value).is_file():
            return Path(value)
    raise IntegrationError(
        f"no recipe in the command `{' '.join(command)}`: name a YAML recipe file, e.g. "
        "`mmfreeze train -- automodel recipe.yaml --nproc-per-node 2`", key="train")


def _existing(path: Path, flag: str) -> Path:
    if not path.is_file():
        raise IntegrationError(f"{flag} {path}: no such recipe file", key="train")
    return path


def activation_environment(recipe: Path, *, guard: bool | None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``environ`` with the integration activated for ``recipe`` in every Python process it starts."""
    python_path = [str(ACTIVATION_DIR), *filter(None, environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**environ, "PYTHONPATH": os.pathsep.join(python_path), ACTIVATE_ENV: "1", RECIPE_ENV: str(recipe.resolve())}
    if guard is False:
        env[GUARD_ENV] = "0"
    return env


def run_with_integration(command: Sequence[str], *, guard: bool | None) -> int:
    """Run ``command`` (the framework's launcher) with the integration installed; its exit code.

    The integration is installed (and removed) here first, so an unsupported release, a missing
    hook point or a bad recipe key fails before any process starts."""
    if not command:
        raise IntegrationError("no command to run: `mmfreeze train -- automodel recipe.yaml`", key="train")
    recipe = find_recipe(command)
    install(recipe, guard=guard).uninstall()
    try:
        return subprocess.run(list(command), env=activation_environment(recipe, guard=guard), check=False).returncode
    except FileNotFoundError as error:
        raise IntegrationError(f"cannot run {command[0]!r}: {error.strerror}", key="train") from error


def activate_from_environment(environ: Mapping[str, str] = os.environ) -> None:
    """What the activation ``sitecustomize`` runs: ``install()`` when the launch asked for it.

    A process that cannot install exits at once (code 3) with the reason: Python reports an
    exception in ``sitecustomize`` and carries on, which would train without the integration, and
    ``SystemExit`` there is a fatal interpreter error with a traceback."""
    if environ.get(ACTIVATE_ENV) != "1":
        return
    try:
        install(guard=False if environ.get(GUARD_ENV) == "0" else None)
    except MmfreezeError as error:
        print(f"mmfreeze train: {error}", file=sys.stderr, flush=True)
        os._exit(3)
