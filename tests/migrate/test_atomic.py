"""Writes are atomic: an injected write error or a killed process leaves each file fully old or fully new."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmfreeze.atomic import replace_file
from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.atomic import write_atomic
from mmfreeze.migrate.report import FileResult
from mmfreeze.migrate.run import write_changed

OLD, NEW = "old: 1\n" * 500, "new: 2\n" * 700
REPO = Path(__file__).resolve().parents[2]


def _files(tmp_path: Path, count: int) -> list[Path]:
    paths = [tmp_path / f"r{i}.yaml" for i in range(count)]
    for path in paths:
        path.write_text(OLD)
    return paths


def test_write_atomic_keeps_permissions_and_leaves_no_temporary(tmp_path):
    path = _files(tmp_path, 1)[0]
    path.chmod(0o640)
    write_atomic(path, NEW)
    assert path.read_text() == NEW and (path.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r0.yaml"]


def test_an_injected_replace_error_mid_run_leaves_every_file_old_or_new(tmp_path, monkeypatch):
    paths = _files(tmp_path, 6)
    real_replace, calls = os.replace, []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)  # a full disk cannot be caused here for real
    results = [FileResult(display=p.name, old_text=OLD, new_text=NEW, status="preserved") for p in paths]
    errors = write_changed(paths, results)
    assert len(errors) == 1 and isinstance(errors[0], MigrationError) and "No space left" in str(errors[0])
    contents = [p.read_text() for p in paths]
    assert contents.count(OLD) == 1 and contents.count(NEW) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


# --- Real kills: a child process writes with mmfreeze.atomic.replace_file and is SIGKILLed. ---
#
# Each trial starts from OLD, spawns a child that says "ready" and then replaces the file with
# BIG_NEW, and kills it. Kill moments vary from "right after ready" to well past the measured time
# of one replace, so kills land before, during and after the write. Two trials more are pinned
# inside the write: the child's os.fsync (called by replace_file after the whole temporary file is
# written, before the rename) says "written" and waits, and the kill lands then.

BIG_OLD, BIG_NEW = b"o" * (4 << 20), b"n" * (4 << 20)  # large enough that a write takes milliseconds
VARIED_KILLS, PINNED_KILLS = 14, 2
CHILD = """
import os, sys, time
from pathlib import Path
from mmfreeze.atomic import replace_file
if sys.argv[2] == "pin":
    real_fsync = os.fsync
    def announced_fsync(fd):
        print("written", flush=True)
        time.sleep(30)  # killed long before this ends
        real_fsync(fd)
    os.fsync = announced_fsync
print("ready", flush=True)
replace_file(Path(sys.argv[1]), b"n" * (4 << 20))  # BIG_NEW
print("done", flush=True)
"""


@dataclass(frozen=True)
class Trial:
    pinned: bool
    delay_s: float
    content: bytes
    leftovers: tuple[str, ...]
    """Files other than the target left in the directory after the kill."""
    writer_pid: int
    after_next_write: tuple[str, ...]
    """Files other than the target once the next write of the target (another writer's) has run."""


def _kill_trial(folder: Path, *, pinned: bool, delay_s: float) -> Trial:
    target = folder / "recipe.yaml"
    for leftover in folder.iterdir():
        leftover.unlink()
    target.write_bytes(BIG_OLD)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(target), "pin" if pinned else "free"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert child.stdout.readline() == "ready\n"
        if pinned:
            assert child.stdout.readline() == "written\n"  # inside replace_file, before its rename
        else:
            time.sleep(delay_s)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
        child.stdout.close()
    content, leftovers = target.read_bytes(), _others(folder, target)
    replace_file(target, content)
    return Trial(pinned, delay_s, content, leftovers, child.pid, _others(folder, target))


def _others(folder: Path, target: Path) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in folder.iterdir() if p != target))


@pytest.fixture(scope="module")
def kill_trials(tmp_path_factory: pytest.TempPathFactory) -> list[Trial]:
    folder = tmp_path_factory.mktemp("killed_writer")
    calibration = folder / "calibration.yaml"
    calibration.write_bytes(BIG_OLD)
    started = time.perf_counter()
    replace_file(calibration, BIG_NEW)
    one_write_s = max(time.perf_counter() - started, 0.005)
    # From 0 to 3x one write (the child's interpreter also needs a moment after "ready").
    delays = [3 * one_write_s * i / (VARIED_KILLS - 1) for i in range(VARIED_KILLS)]
    trials = [_kill_trial(folder, pinned=False, delay_s=delay) for delay in delays]
    trials += [_kill_trial(folder, pinned=True, delay_s=0.0) for _ in range(PINNED_KILLS)]
    # Bounded retries until both outcomes were seen (a very fast or very slow machine can shift
    # every varied kill to one side); the assertions below then state what was seen.
    for attempt in range(VARIED_KILLS):
        if {BIG_OLD, BIG_NEW} <= {t.content for t in trials}:
            break
        trials.append(_kill_trial(folder, pinned=False, delay_s=3 * one_write_s * (attempt + 1)))
    return trials


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_writer_killed_at_any_moment_leaves_the_file_entirely_old_or_entirely_new(kill_trials):
    torn = [(t.delay_s, len(t.content)) for t in kill_trials if t.content not in (BIG_OLD, BIG_NEW)]
    assert not torn, f"kills left a file that is neither old nor new (delay, size): {torn}"
    outcomes = {"old" if t.content == BIG_OLD else "new" for t in kill_trials}
    assert outcomes == {"old", "new"}, f"only {outcomes} observed: the kills did not span the write"
    # A kill inside replace_file (the whole temporary written, not yet renamed) leaves the old file.
    assert all(t.content == BIG_OLD for t in kill_trials if t.pinned)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_writer_killed_at_any_moment_leaves_no_temporary_file_past_the_next_write(kill_trials):
    """The content goes into an unnamed file (O_TMPFILE), so a kill while writing leaves nothing; it is
    named (with the writer's pid) only for the rename, and no system call links a file over another,
    so a kill in the instant between the two leaves that one name, which the next write removes."""
    stale = [(t.pinned, t.delay_s, t.after_next_write) for t in kill_trials if t.after_next_write]
    assert not stale, f"temporary files left past the next write (pinned, delay, files): {stale}"
    foreign = [(t.delay_s, name) for t in kill_trials for name in t.leftovers
               if not name.startswith(f".recipe.yaml.{t.writer_pid}.")]
    assert not foreign, f"files left by a kill that are not the killed writer's named temporary: {foreign}"


def test_the_next_write_removes_a_temporary_name_whose_writer_died_but_keeps_a_live_writers(tmp_path):
    """A kill between naming the finished temporary and renaming it leaves a name with the writer's
    pid; the next write of the same file removes it once that process is gone."""
    target = tmp_path / "recipe.yaml"
    target.write_bytes(b"old")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / f".recipe.yaml.{dead.pid}.0badc0de.mmfreeze-tmp"
    live = tmp_path / f".recipe.yaml.{os.getpid()}.0badc0de.mmfreeze-tmp"
    orphan.write_bytes(b"half")
    live.write_bytes(b"half")
    replace_file(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name])
