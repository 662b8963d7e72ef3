"""Hostile and odd files are bounded and said as what they are (issue 48, item 8), with real parts:
real named pipes, a real device, real file modes under a real umask, and the real command in a
fresh process (a pipe read by mistake would hang it: each run has a timeout)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from mmfreeze.atomic import replace_file
from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.exceptions import RecipeError, SnapshotError
from mmfreeze.recipes.recipe import read_yaml
from mmfreeze.regular_files import read_regular
from mmfreeze.snapshots.store import read_stored
from tests.conftest import EXAMPLE_CONFIGS, MMFREEZE, top_level_environment

BUNDLED = EXAMPLE_CONFIGS / "vlm_finetune" / "qwen2_vl" / "qwen2_vl_2b_cord_v2.yaml"


def command(cwd: Path, *args: str, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**top_level_environment(), "CI": "true"}
    return subprocess.run([*MMFREEZE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=None if umask is None else (lambda: os.umask(umask)))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    shutil.copy(BUNDLED, root / "recipes" / "a.yaml")
    return root


def test_a_named_pipe_or_a_device_is_refused_unread(tmp_path: Path) -> None:
    pipe = tmp_path / "recipe.yaml"
    os.mkfifo(pipe)  # no writer: an open for reading that waited would block forever
    with pytest.raises(OSError, match=r"not a regular file \(a named pipe\)"):
        read_regular(pipe, limit=1024)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(RecipeError, match=r"cannot read: .*not a regular file \(a character device\)"):
        read_yaml(zero)
    with pytest.raises(SnapshotError, match=r"not a regular file \(a character device\)"):
        read_stored(zero)


def test_a_file_beyond_the_limit_is_refused_after_reading_no_more_than_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" * 1000)
    assert read_regular(big, limit=5000) == b"a: 1\n" * 1000
    with pytest.raises(OSError, match="larger than the limit of 4999 bytes"):
        read_regular(big, limit=4999)


@pytest.mark.slow  # the real command in fresh processes
def test_a_named_pipe_among_the_recipes_is_an_input_error_and_the_others_are_checked_and_migrated(repo: Path) -> None:
    os.mkfifo(repo / "recipes" / "pipe.yaml")
    snapshot = command(repo, "snapshot", "--update", "--report", "json", "recipes")
    outcomes = {o["recipe"]: (o["status"], o["message"]) for o in json.loads(snapshot.stdout)["recipes"]}
    assert snapshot.returncode == ExitCode.INPUT_ERROR, snapshot.stderr
    assert outcomes["recipes/a.yaml"] == ("written", None)
    assert outcomes["recipes/pipe.yaml"] == ("input_error", "recipes/pipe.yaml: was not checked: not a regular file")
    migrate = command(repo, "migrate", "--check", "recipes")
    assert migrate.returncode == ExitCode.INPUT_ERROR, migrate.stdout + migrate.stderr
    assert "recipes/pipe.yaml: cannot read: [Errno 22] not a regular file (a named pipe)" in migrate.stderr


@pytest.mark.slow
def test_a_yaml_file_with_a_custom_tag_is_an_input_error_of_migrate_and_the_other_files_still_migrate(repo: Path) -> None:
    (repo / "recipes" / "data.yaml").write_text("items: !include other.yaml\n")
    shutil.copy(BUNDLED, repo / "recipes" / "b.yaml")
    result = command(repo, "migrate", "--report", "json", "recipes")
    assert result.returncode == ExitCode.INPUT_ERROR, result.stderr
    files = {entry["file"]: entry for entry in json.loads(result.stdout)["files"]}
    assert files["recipes/data.yaml"]["status"] == "skipped"
    assert files["recipes/data.yaml"]["error"] == (
        "recipes/data.yaml: YAML does not load: the custom tag '!include' has no meaning outside the program that "
        "wrote it; only plain YAML is read (remove the tag)")
    assert files["recipes/a.yaml"]["status"] != "skipped" and files["recipes/b.yaml"]["status"] != "skipped"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_follows_the_umask_and_a_replaced_one_keeps_its_mode(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        replace_file(tmp_path / "new.txt", b"x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o666 & ~umask
    (tmp_path / "kept.txt").write_bytes(b"old")
    (tmp_path / "kept.txt").chmod(0o640)
    replace_file(tmp_path / "kept.txt", b"new")
    assert stat.S_IMODE((tmp_path / "kept.txt").stat().st_mode) == 0o640


@pytest.mark.slow
def test_a_snapshot_the_command_writes_follows_the_umask(repo: Path) -> None:
    result = command(repo, "snapshot", "--update", "recipes", umask=0o022)
    assert result.returncode == ExitCode.OK, result.stderr
    written = repo / "snapshots" / "recipes" / "a.yaml.frozen.txt"
    assert stat.S_IMODE(written.stat().st_mode) == 0o644


@pytest.mark.slow
def test_an_empty_snapshot_is_an_input_error_and_a_reordered_one_is_said_to_be_reordered(repo: Path) -> None:
    shutil.copy(EXAMPLE_CONFIGS / "vlm_finetune" / "llava" / "llava_1_5_13b_scienceqa.yaml", repo / "recipes" / "a.yaml")
    assert command(repo, "snapshot", "--update", "recipes").returncode == ExitCode.OK
    stored = repo / "snapshots" / "recipes" / "a.yaml.frozen.txt"
    head, body = stored.read_text().split("\n---\n", 1)
    first, second, rest = body.split("\n", 2)
    stored.write_text(f"{head}\n---\n{second}\n{first}\n{rest}")
    reordered = command(repo, "snapshot", "--check", "--report", "json", "recipes")
    [outcome] = json.loads(reordered.stdout)["recipes"]
    assert reordered.returncode == ExitCode.CHANGED and outcome["status"] == "changed"
    assert outcome["message"].startswith("snapshots/recipes/a.yaml.frozen.txt holds this very snapshot in another "
                                         "order or layout (edited by hand?): no tensor, adapter, rate or header field moved")
    stored.write_text("")
    empty = command(repo, "snapshot", "--check", "--report", "json", "recipes")
    [outcome] = json.loads(empty.stdout)["recipes"]
    assert empty.returncode == ExitCode.INPUT_ERROR and outcome["status"] == "input_error"
    assert outcome["message"] == ("snapshots/recipes/a.yaml.frozen.txt: the snapshot file is empty; "
                                  "`mmfreeze snapshot --update recipes/a.yaml` writes it again")


@pytest.mark.slow
def test_a_snapshot_subfolder_linked_outside_is_neither_written_nor_read(repo: Path, tmp_path: Path) -> None:
    """Issue 48: `--update` wrote through the link, then crashed with a traceback."""
    (repo / "recipes" / "team").mkdir()
    shutil.move(repo / "recipes" / "a.yaml", repo / "recipes" / "team" / "a.yaml")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "snapshots" / "recipes").mkdir(parents=True)
    (repo / "snapshots" / "recipes" / "team").symlink_to(outside)
    result = command(repo, "snapshot", "--update", "--report", "json", "recipes")
    assert result.returncode == ExitCode.INPUT_ERROR and "Traceback" not in result.stderr, result.stderr
    [outcome] = json.loads(result.stdout)["recipes"]
    assert outcome["message"] == (f"snapshots/recipes/team/a.yaml.frozen.txt: resolves through a symbolic link to "
                                  f"{outside}, outside the snapshot folder {repo / 'snapshots'}; nothing read or "
                                  "written there (replace the link with a folder)")
    assert list(outside.iterdir()) == []
