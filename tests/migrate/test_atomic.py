"""Writes are atomic: an injected write error or a killed process leaves each file fully old or fully new."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmfreeze.exceptions import MigrationError
from mmfreeze.migrate.atomic import write_atomic
from mmfreeze.migrate.report import FileResult
from mmfreeze.migrate.run import write_changed

OLD, NEW = "old: 1\n" * 500, "new: 2\n" * 700


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


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_process_killed_mid_run_leaves_every_file_old_or_new(tmp_path):
    paths = _files(tmp_path, 100)
    script = (
        "import os, sys, time\nfrom pathlib import Path\n"
        "from mmfreeze.migrate import atomic\n"
        "real = os.replace\n"
        "def slow(src, dst):\n    time.sleep(0.02)\n    real(src, dst)\n"
        "os.replace = slow\n"
        f"for p in sorted(Path({str(tmp_path)!r}).glob('*.yaml')):\n    atomic.write_atomic(p, {NEW!r})\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script])
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)
    process.wait()
    contents = {p.read_text() for p in paths}
    assert contents <= {OLD, NEW}
