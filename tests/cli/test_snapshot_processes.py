"""No process outlives `mmfreeze snapshot`: SIGTERM (a CI timeout), SIGKILL, SIGINT of a cold check.

A real cold run: a fresh ``--cache-dir`` and several bundled recipes of different models, so the
forkserver has imported torch and its workers are building when the signal arrives. The process
tree is collected with psutil up to that moment; every process in it must be gone 10 s later.
Before: the forkserver, its workers (1.4-2.2 GB) and the resource tracker were still running.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.cli.test_snapshot_faults import MMFREEZE
from tests.conftest import EXAMPLE_CONFIGS, top_level_environment

RECIPES = (
    "vlm_finetune/gemma3/gemma3_4b_cord_v2.yaml",
    "vlm_finetune/idefics3/idefics3_8b_docmatix.yaml",
    "vlm_finetune/llava/llava_1_5_7b_tower_unfrozen_cord_v2.yaml",
    "vlm_finetune/mllama/mllama_11b_vqav2.yaml",
    "vlm_finetune/internvl/internvl3_1b_textvqa.yaml",
    "vlm_finetune/paligemma/paligemma_3b_224_vqav2.yaml",
    "vlm_finetune/qwen2_5_vl/qwen2_5_vl_3b_rdr_items.yaml",
    "vlm_finetune/aya_vision/aya_vision_8b_multilingual.yaml",
)
"""Eight distinct models: a cold check builds for several seconds after the forkserver starts."""
GONE_WITHIN = 10.0
WORKERS_WITHIN = 240.0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    for recipe in RECIPES:
        shutil.copy(EXAMPLE_CONFIGS / recipe, root / "recipes" / Path(recipe).name)
    return root


def start_cold_check(repo: Path) -> subprocess.Popen[str]:
    command = [*MMFREEZE, "snapshot", "--check", "--workers", "2", "--cache-dir", str(repo.parent / "cold-cache"), "recipes"]
    return subprocess.Popen(command, cwd=repo, env={**top_level_environment(), "CI": "true"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tree_while_building(command: subprocess.Popen[str]) -> dict[int, psutil.Process]:
    """Every process the command started, polled until a worker of the forkserver exists (a build
    is running), and once more at that moment."""
    parent = psutil.Process(command.pid)
    tree: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + WORKERS_WITHIN
    while time.monotonic() < deadline and command.poll() is None:
        children = _children(parent)
        tree.update((child.pid, child) for child in children)
        if any(_parent_pid(child) not in (command.pid, None) for child in children):
            return tree
        time.sleep(0.05)
    command.kill()
    pytest.fail(f"no build worker appeared (exit {command.wait()}): {command.stderr.read()[-2000:]}")


def _children(parent: psutil.Process) -> list[psutil.Process]:
    try:
        return parent.children(recursive=True)
    except psutil.Error:
        return []


def _parent_pid(process: psutil.Process) -> int | None:
    try:
        return process.ppid()
    except psutil.Error:
        return None


def alive_after(tree: dict[int, psutil.Process], seconds: float) -> list[str]:
    """The processes of ``tree`` still running ``seconds`` from now (zombies count as gone)."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [process for process in tree.values() if _running(process)]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    described = [f"{process.pid}: {' '.join(process.cmdline())[:120]}" for process in alive if _running(process)]
    for process in alive:  # never leave them to the next test
        try:
            process.kill()
        except psutil.Error:
            pass
    return described


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def roles(tree: dict[int, psutil.Process], command: subprocess.Popen[str]) -> list[str]:
    """What each process of ``tree`` is: the command's children are the forkserver and the resource
    tracker; the forkserver's children are the build workers."""
    found = []
    for process in tree.values():
        if process.ppid() != command.pid:
            found.append("worker")
        else:
            found.append("forkserver" if "forkserver" in " ".join(process.cmdline()) else "resource tracker")
    return sorted(found)


@pytest.mark.slow  # a cold build of several models
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_cold_check_leaves_no_process_behind(repo: Path, signum: signal.Signals) -> None:
    """SIGTERM (what `timeout` sends) or SIGKILL of the command while workers build: the command ends
    by that signal, and the forkserver, the workers and the resource tracker are gone within 10 s
    (the forkserver by PR_SET_PDEATHSIG, each worker by watching the command's pipe)."""
    command = start_cold_check(repo)
    tree = tree_while_building(command)
    assert {"forkserver", "worker", "resource tracker"} <= set(roles(tree, command)), roles(tree, command)
    os.kill(command.pid, signum)
    assert command.wait(timeout=60) == -signum
    assert alive_after(tree, GONE_WITHIN) == []


@pytest.mark.slow
def test_sigint_of_a_cold_check_stops_the_workers_and_exits_130_without_a_report(repo: Path) -> None:
    """SIGINT (Ctrl-C, or a CI cancel) while workers build: the workers are stopped rather than
    waited for, the command says it was interrupted and exits 130, with no report (before: exit 0
    and an empty report, a green run that checked nothing); nothing it started is left."""
    command = start_cold_check(repo)
    tree = tree_while_building(command)
    os.kill(command.pid, signal.SIGINT)
    stdout, stderr = command.communicate(timeout=60)
    assert command.returncode == 128 + signal.SIGINT, stdout + stderr
    assert re.search(rf"^interrupted: \d of {len(RECIPES)} recipes checked, no report$", stderr, re.MULTILINE), stderr
    assert stdout == ""
    assert alive_after(tree, GONE_WITHIN) == []


def test_a_ctrl_c_that_python_drops_in_a_finalizer_still_marks_the_run_interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The KeyboardInterrupt of a SIGINT that lands while a finalizer runs goes to
    ``sys.unraisablehook`` and no further ("Exception ignored in"); the run must still end as
    interrupted (exit 130), never as a finished check (a cold check under load once exited 4 with
    every recipe reported)."""
    from mmfreeze.cli.snapshot import _sigint_noted

    dropped: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: dropped.append(unraisable.exc_type))

    class SlowFinalizer:
        def __del__(self) -> None:
            time.sleep(0.5)  # the signal arrives here

    with _sigint_noted() as noted:
        doomed = SlowFinalizer()
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        del doomed
    assert dropped == [KeyboardInterrupt], "Python dropped it: the note is all that is left"
    assert noted.is_set()
