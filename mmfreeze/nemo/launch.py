"""`mmfreeze train -- COMMAND`: run the framework's own command line with the guard armed, and the
integration where the recipe needs it, in the processes that train.

The framework's launcher (``automodel``) and the workers torchrun starts are separate interpreters,
so each is armed at interpreter start: the launch puts :data:`ACTIVATION_DIR` first on
``PYTHONPATH``, whose ``sitecustomize`` hands over to :mod:`mmfreeze.nemo.activate` in the launch's
environment and nowhere else (:func:`activation_environment`). The same variables, exported in a
job script, arm a launch mmfreeze does not start (:func:`export_lines`, `mmfreeze train --env`).

Before the command starts, the recipe is read and what it needs is checked against the installed
framework, so a bad key, an unsupported release or a launch the guard cannot reach fails here.
SIGINT and SIGTERM are passed to the command, and its exit code is returned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mmfreeze.exceptions import IntegrationError
from mmfreeze.parent_death import signal_on_parent_death
from mmfreeze.guard.locate import find_snapshot, read_snapshot
from mmfreeze.nemo.activate import ACTIVATE_ENV, GUARD_ENV, PREFIX_ENV, RECIPE_ENV
from mmfreeze.nemo.context import run_context
from mmfreeze.nemo.installation import install
from mmfreeze.recipes.recipe import display_path, read_yaml

ACTIVATION_DIR = Path(__file__).resolve().parent / "activation"
CONFIG_FLAGS = ("-c", "--config", "--config-path")
RECIPE_SUFFIXES = (".yaml", ".yml")
REMOTE_LAUNCHERS = ("skypilot", "nemo_run")
"""Recipe sections that make the framework's command line launch elsewhere, without this environment."""
RETRIEVAL = ("the retrieval recipes train the framework's encoder wrapper (NeMoAutoModelBiEncoder, NeMoAutoModelCrossEncoder, "
             "RetrieverStudentWithProjection), which it builds only from a checkpoint and whose parameter names (no "
             "lm_head; `student.`, `projection.`) no model mmfreeze builds has, so no snapshot describes what it trains")
SPECULATIVE = ("the speculative-decoding recipes train a draft model the recipe class builds itself (`draft_model.*`, not "
               "a transformers Auto class) beside a target it freezes whole; the recipe's `model:` names the target, so "
               "its snapshot describes a model the run does not train")
UNGUARDED_RECIPES = {
    "TrainDiffusionRecipe": "the diffusion recipe never reads freeze_config, so its snapshot describes nothing it trains",
    **dict.fromkeys(("TrainBiEncoderRecipe", "TrainCrossEncoderRecipe", "EmbeddingDistillRecipe"), RETRIEVAL),
    **dict.fromkeys(("TrainEagle1Recipe", "TrainEagle2Recipe", "TrainEagle3Recipe", "TrainDFlashRecipe",
                     "TrainDFlash2Recipe", "TrainDSparkRecipe", "TrainDominoRecipe", "TrainJetSpecRecipe",
                     "TrainVispecRecipe", "TrainVispecStage1Recipe"), SPECULATIVE),
}
"""A recipe class (``recipe:``, short or dotted) -> why a run of it cannot be guarded (refused at launch;
each was trained on a CPU without the guard, and its snapshot could not describe what it trains).
The diffusion-LLM recipes (``recipes/dllm``) read freeze_config and build their optimizer as LLM
fine-tuning does: they are guarded."""
FORWARDED = (signal.SIGINT, signal.SIGTERM)


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
    """``environ`` with mmfreeze armed for ``recipe`` in the processes of this environment it starts."""
    python_path = [str(ACTIVATION_DIR), *filter(None, environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**environ, "PYTHONPATH": os.pathsep.join(python_path), ACTIVATE_ENV: "1", RECIPE_ENV: str(recipe.resolve()),
           PREFIX_ENV: sys.prefix}
    if guard is False:
        env[GUARD_ENV] = "0"
    else:
        env.pop(GUARD_ENV, None)
    return env


def export_lines(recipe: Path, *, guard: bool | None) -> str:
    """The shell line that arms a job script's launch (`sbatch`, `srun`) as `mmfreeze train` would."""
    env = activation_environment(recipe, guard=guard, environ={"PYTHONPATH": "${PYTHONPATH:-}"})
    names = ("PYTHONPATH", ACTIVATE_ENV, RECIPE_ENV, PREFIX_ENV, *([GUARD_ENV] if guard is False else []))
    values = [f"{name}={_quoted(env[name])}" for name in names]
    return "export " + " ".join(values)


def _quoted(value: str) -> str:
    # ${PYTHONPATH:-} must expand in the job's shell: double quotes, the rest escaped.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'


def check_launch(recipe: Path, *, guard: bool | None) -> None:
    """Everything that can be known before the command starts: the recipe's keys, a launch the guard
    cannot reach, a recipe class it cannot guard, the snapshot it compares with (present and
    readable), and the framework functions the recipe needs."""
    document = read_yaml(recipe, shown=display_path(recipe))
    context = run_context(recipe, document, guard=guard)
    if context.guard:
        for section in REMOTE_LAUNCHERS:
            if section in document:
                raise IntegrationError(
                    f"this recipe launches through {section}, whose remote processes do not get this environment, "
                    "so they would train unguarded: launch there with the job's own command and the line "
                    f"`mmfreeze train --env {recipe}` prints, or turn the guard off (`--no-guard`)",
                    source=context.source, key=section)
        if document.get("separate_meshes") is True and context.pipeline_stages:
            raise IntegrationError(
                "knowledge distillation with separate meshes and pipeline stages: a stage's mesh names only its "
                "data-parallel ranks, so the guard waits for every rank of the job, and the teacher's ranks never "
                "step an optimizer; train it with `--no-guard`, or without pipeline stages (separate meshes "
                "alone are guarded)", source=context.source, key="separate_meshes")
        recipe_class = str(document.get("recipe", "")) if not isinstance(document.get("recipe"), Mapping) \
            else str(document["recipe"].get("_target_", ""))
        if (why := UNGUARDED_RECIPES.get(recipe_class.rpartition(".")[2])) is not None:
            raise IntegrationError(f"{recipe_class}: {why}; train it with `--no-guard`", source=context.source,
                                   key="recipe")
    if context.needs:
        install(recipe, guard=False).uninstall()  # every hook point it needs resolves, or nothing runs
    if context.guard:
        read_snapshot(find_snapshot(recipe, None), recipe=recipe)  # the guard's reference, before hours of setup


def _die_with(launcher: int) -> Callable[[], None]:
    """What the command's process runs between fork and exec: SIGTERM when the launcher dies (Linux;
    elsewhere the process group alone), and an exit if it died before this ran."""

    def arm() -> None:
        signal_on_parent_death(signal.SIGTERM)
        if os.getppid() != launcher:
            os._exit(128 + signal.SIGTERM)

    return arm


def _signal_group(child: subprocess.Popen[bytes], number: int) -> None:
    """``number`` to the command's whole process group: a command that exits on SIGTERM leaves none
    of its own children behind."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, number)


def run_with_integration(command: Sequence[str], *, guard: bool | None) -> int:
    """Run ``command`` armed for the recipe it trains; its exit code (128 + N when signal N ended it)."""
    if not command:
        raise IntegrationError("no command to run: `mmfreeze train -- automodel recipe.yaml`", key="train")
    recipe = find_recipe(command)
    check_launch(recipe, guard=guard)
    try:
        # Its own process group, which every forwarded signal reaches (the command's children too),
        # and a parent-death signal: a launcher killed outright (SIGKILL) takes the command with it.
        child = subprocess.Popen(list(command), env=activation_environment(recipe, guard=guard), process_group=0,
                                 preexec_fn=_die_with(os.getpid()))
    except FileNotFoundError as error:
        raise IntegrationError(f"cannot run {command[0]!r}: {error.strerror}", key="train") from error
    previous = {number: signal.signal(number, lambda received, _: _signal_group(child, received))
                for number in FORWARDED}
    try:
        code = child.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 128 - code if code < 0 else code

