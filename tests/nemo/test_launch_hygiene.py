"""`mmfreeze train` touches only the processes that train (issue 41): real interpreters, real signals,
a real second virtual environment. What the launch costs an interpreter that does nothing is
measured by ``benchmarks/launch_overhead.py``, not timed here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import venv
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.nemo.launch import activation_environment
from tests.conftest import MMFREEZE

NATIVE = "model: {}\nfreeze_config:\n  freeze_modules: [{path: model.visual}]\n"
REPORT_MODULES = "import sys; print(sorted({m.split('.')[0] for m in sys.modules} & {'mmfreeze', 'torch', 'ruamel', 'nemo_automodel'}))"


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(NATIVE)
    return path


def run(command: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, **kwargs)


def test_an_interpreter_that_never_imports_torch_loads_nothing_heavy(recipe: Path) -> None:
    said = run([sys.executable, "-c", REPORT_MODULES], activation_environment(recipe, guard=None))
    assert said.returncode == 0 and said.stdout.strip() == "['mmfreeze']", said.stdout + said.stderr
    assert said.stderr == ""


def test_an_interpreter_of_another_environment_is_left_alone(recipe: Path, tmp_path: Path) -> None:
    """Before: "Error in sitecustomize" in every other environment's interpreter under the launch."""
    other = tmp_path / "other-venv"
    venv.create(other, with_pip=False)
    said = run([str(other / "bin" / "python"), "-c", "import sys; print('mmfreeze' in sys.modules)"],
               activation_environment(recipe, guard=None))
    assert (said.returncode, said.stdout, said.stderr) == (0, "False\n", "")


def test_a_multiprocessing_worker_is_not_armed(recipe: Path, tmp_path: Path) -> None:
    """A DataLoader worker started with `spawn` (and the resource tracker) imports nothing of mmfreeze."""
    script = tmp_path / "spawn.py"
    script.write_text(textwrap.dedent("""\
        import multiprocessing, sys

        def report(queue):
            queue.put(sorted({m.split('.')[0] for m in sys.modules} & {'mmfreeze'}))

        if __name__ == "__main__":
            context = multiprocessing.get_context("spawn")
            queue = context.Queue()
            worker = context.Process(target=report, args=(queue,))
            worker.start()
            print("parent", sorted({m.split('.')[0] for m in sys.modules} & {'mmfreeze'}), "worker", queue.get())
            worker.join()
        """))
    said = run([sys.executable, str(script), str(recipe)], activation_environment(recipe, guard=None))
    assert said.stdout.strip() == "parent ['mmfreeze'] worker []", said.stdout + said.stderr


def test_a_raising_sitecustomize_of_the_environment_stops_the_run(recipe: Path, tmp_path: Path) -> None:
    """Before: Python reported the error and carried on, without the integration, unguarded (exit 0)."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("raise RuntimeError('the cluster image is misconfigured')\n")
    env = activation_environment(recipe, guard=None)
    env["PYTHONPATH"] += os.pathsep + str(own)
    said = run([sys.executable, "-c", "print('trained')"], env)
    assert said.returncode == 3 and said.stdout == ""
    assert ("mmfreeze train: the environment's own sitecustomize failed (RuntimeError: the cluster image is "
            "misconfigured); the run is stopped, since it would train without the guard") in said.stderr
    (own / "sitecustomize.py").write_text("import os; os.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    said = run([sys.executable, "-c", "import os; print(os.environ.get('OWN_SITECUSTOMIZE'))"], env)
    assert said.stdout == "ran\n", "the environment's own sitecustomize still runs"


@pytest.mark.parametrize(("sent", "expected"), [(signal.SIGTERM, 42), (signal.SIGINT, 43)])
def test_sigterm_and_sigint_reach_the_command_and_its_exit_code_is_returned(
    recipe: Path, sent: signal.Signals, expected: int,
) -> None:
    child = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))\n"
             "signal.signal(signal.SIGINT, lambda *_: sys.exit(43))\n"
             "print('ready', flush=True)\n"
             "time.sleep(60)\n")
    # --no-guard: this recipe has no snapshot, which a guarded launch asks for before it starts
    launch = subprocess.Popen([*MMFREEZE, "train", "--no-guard", "--", sys.executable, "-c", child, str(recipe)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert launch.stdout.readline() == "ready\n"
    started = time.monotonic()
    launch.send_signal(sent)
    stdout, stderr = launch.communicate(timeout=30)
    assert launch.returncode == expected, stderr
    assert time.monotonic() - started < 10


def test_a_command_a_signal_ends_exits_128_plus_the_signal(recipe: Path) -> None:
    child = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    said = run([*MMFREEZE, "train", "--no-guard", "--", sys.executable, "-c", child, str(recipe)], dict(os.environ))
    assert said.returncode == 128 + signal.SIGKILL


@pytest.fixture
def snapshotted_recipe(tmp_path: Path) -> Path:
    """A recipe in a team repository, with the snapshot a guarded launch asks for before it starts."""
    import torch

    from tests.guard.helpers import write_snapshot

    root = tmp_path / "team"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    write_snapshot(torch.nn.Linear(2, 2), {}, root, "recipes/recipe.yaml")
    return root / "recipes" / "recipe.yaml"


def test_the_job_script_line_arms_a_launch_mmfreeze_does_not_start(snapshotted_recipe: Path) -> None:
    recipe = snapshotted_recipe
    line = run([*MMFREEZE, "train", "--env", str(recipe)], dict(os.environ), cwd=recipe.parents[1])
    assert line.returncode == 0 and line.stdout.startswith("export PYTHONPATH="), line.stderr
    said = run(["bash", "-c", f"{line.stdout.strip()} && {sys.executable} -c \"{REPORT_MODULES}\""],
               {**os.environ, "PYTHONPATH": ""})
    assert said.stdout.strip() == "['mmfreeze']", said.stdout + said.stderr
    refused = run([*MMFREEZE, "train", "--env", str(recipe), "automodel"], dict(os.environ), cwd=recipe.parents[1])
    assert refused.returncode == ExitCode.USAGE


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


SPAWNS_A_CHILD = ("import subprocess, sys, time\n"
                  "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
                  "print(child.pid, flush=True)\n"
                  "time.sleep(120)\n")
"""A command that starts a child of its own and waits, printing the child's pid (issue 48)."""


def test_a_command_dies_with_its_launcher_killed_outright(recipe: Path) -> None:
    """SIGKILL runs nothing in the launcher: the command gets SIGTERM through its parent-death signal."""
    child = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(120)\n"
    launch = subprocess.Popen([*MMFREEZE, "train", "--no-guard", "--", sys.executable, "-c", child, str(recipe)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    command = int(launch.stdout.readline())
    launch.kill()
    launch.wait(timeout=30)
    assert _gone(command), "the command outlived its launcher"


def test_sigterm_to_the_launcher_reaches_the_commands_own_children(recipe: Path) -> None:
    launch = subprocess.Popen([*MMFREEZE, "train", "--no-guard", "--", sys.executable, "-c", SPAWNS_A_CHILD,
                               str(recipe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    grandchild = int(launch.stdout.readline())
    launch.send_signal(signal.SIGTERM)
    launch.communicate(timeout=30)
    assert launch.returncode == 128 + signal.SIGTERM
    assert _gone(grandchild), "the command's own child outlived the SIGTERM its launcher passed on"
