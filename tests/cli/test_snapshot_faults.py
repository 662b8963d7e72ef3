"""`mmfreeze snapshot` under real faults, never mocks: a file size limit (``ulimit -f``), a read-only
snapshot folder, an unreadable snapshot, a recipe symlinked from outside the repository, and file
names pytest would read as test ids. Each test shows the exit code and the line a user reads.

Every command runs in a subprocess (its own pytest session, as in ``test_snapshot.py``), in a
repository made for the test: a ``pyproject.toml`` with ``[tool.mmfreeze]``, a copy of one bundled
recipe, and its snapshot made with ``snapshot --update``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.conftest import EXAMPLE_CONFIGS, MMFREEZE, top_level_environment

pytestmark = pytest.mark.slow  # each case runs the real command in a subprocess under a real fault

BUNDLED = EXAMPLE_CONFIGS / "vlm_finetune" / "qwen2_vl" / "qwen2_vl_2b_cord_v2.yaml"
SETTINGS = '[project]\nname = "team-recipes"\n\n[tool.mmfreeze]\n'
FREEZE_TOWER = "freeze_config:\n  freeze_vision_tower: true\n"
"""Appended to the recipe: its snapshot then lists the vision tower's names, well over 1 KiB."""
FILE_SIZE_LIMIT = 1024  # bytes: `ulimit -f 1`; the accepted snapshot is smaller, the changed one larger

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2

Fault = Callable[[], None]


def run(cwd: Path, *args: str, fault: Fault | None = None) -> subprocess.CompletedProcess[str]:
    env = {**top_level_environment(), "CI": "true"}
    return subprocess.run([*MMFREEZE, "snapshot", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=fault)


def said(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def file_size_limit() -> None:
    """``ulimit -f``: the child may write no file beyond FILE_SIZE_LIMIT bytes (RLIMIT_FSIZE)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def bound_by_permissions() -> None:
    """Make file modes bind the child even when the tests run as root: drop the capabilities that
    let root ignore them from the bounding set, which the exec'd command's own set comes from."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one recipe, a copy of a bundled one, and its accepted snapshot."""
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(SETTINGS)
    shutil.copy(BUNDLED, root / "recipes" / "a.yaml")
    update = run(root, "--update", "recipes")
    assert update.returncode == ExitCode.OK, said(update)
    return root


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], None]]:
    """Makes folders read-only (mode 0555) for a command run with ``fault=bound_by_permissions``,
    and checks the fault is real here: a child that tries to create a file in it fails."""
    folders: list[Path] = []

    def make(folder: Path) -> None:
        folder.chmod(0o555)
        folders.append(folder)
        probe = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", str(folder / "probe")]
        if subprocess.run(probe, preexec_fn=bound_by_permissions, capture_output=True, timeout=60).returncode == 0:
            (folder / "probe").unlink()
            pytest.fail("the fault was not caused: a process without override capabilities wrote into a folder of mode 0555")

    yield make
    for folder in folders:
        folder.chmod(0o755)


def snapshot_of(repo: Path, recipe: str) -> Path:
    return repo / "snapshots" / (recipe + ".frozen.txt")


def test_a_snapshot_write_cut_off_by_the_file_size_limit_keeps_the_old_file_and_fails_naming_it(repo: Path) -> None:
    """`--update` under `ulimit -f 1` -> exit 3, the snapshot's path and the reason; the accepted file
    stays byte for byte, no temporary file is left; without the limit the same update succeeds."""
    stored = snapshot_of(repo, "recipes/a.yaml")
    accepted = stored.read_bytes()
    assert len(accepted) < FILE_SIZE_LIMIT
    with (repo / "recipes" / "a.yaml").open("a") as recipe:
        recipe.write(FREEZE_TOWER)
    check = run(repo, "--check", "recipes")
    assert check.returncode == ExitCode.CHANGED, said(check)

    limited = run(repo, "--update", "recipes", fault=file_size_limit)
    assert limited.returncode == ExitCode.INPUT_ERROR, said(limited)
    assert "recipes/a.yaml: input error (snapshots/recipes/a.yaml.frozen.txt)" in limited.stdout
    assert "snapshots/recipes/a.yaml.frozen.txt: cannot write the snapshot: File too large" in limited.stdout
    assert "1 input error" in limited.stderr and "updated" not in limited.stderr
    assert stored.read_bytes() == accepted
    assert [path.name for path in stored.parent.iterdir()] == [stored.name]

    unlimited = run(repo, "--update", "recipes")
    assert unlimited.returncode == ExitCode.OK and "1 updated" in unlimited.stderr, said(unlimited)
    assert len(stored.read_bytes()) > FILE_SIZE_LIMIT  # the limit, nothing else, stopped the first write


def test_a_read_only_snapshot_folder_is_a_write_error_not_a_missing_snapshot(repo: Path, read_only) -> None:
    """A new recipe whose snapshot folder is read-only: `--update` -> exit 3 naming the snapshot and
    "Permission denied", never "missing"; the recipe already accepted there still passes, and
    `--check` of it (which writes nothing) exits 0."""
    shutil.copy(BUNDLED, repo / "recipes" / "b.yaml")
    folder = snapshot_of(repo, "recipes/a.yaml").parent
    read_only(folder)

    update = run(repo, "--update", "--report", "json", "recipes", fault=bound_by_permissions)
    assert update.returncode == ExitCode.INPUT_ERROR, said(update)
    outcomes = {entry["recipe"]: entry for entry in json.loads(update.stdout)["recipes"]}
    assert outcomes["recipes/a.yaml"]["status"] == "passed"
    assert outcomes["recipes/b.yaml"]["status"] == "input_error"
    assert outcomes["recipes/b.yaml"]["message"] == "snapshots/recipes/b.yaml.frozen.txt: cannot write the snapshot: Permission denied"
    assert "missing" not in update.stderr and not snapshot_of(repo, "recipes/b.yaml").exists()

    check = run(repo, "--check", "recipes/a.yaml", fault=bound_by_permissions)
    assert check.returncode == ExitCode.OK and "1 passed" in check.stderr, said(check)


def test_an_unreadable_snapshot_is_an_input_error_not_a_missing_snapshot(repo: Path) -> None:
    """A stored snapshot the command may not read (mode 0000) -> exit 3 naming it, never "missing",
    and `--update` does not overwrite what it could not read."""
    stored = snapshot_of(repo, "recipes/a.yaml")
    accepted = stored.read_bytes()
    stored.chmod(0o000)
    probe = [sys.executable, "-c", "import sys; open(sys.argv[1]).read()", str(stored)]
    if subprocess.run(probe, preexec_fn=bound_by_permissions, capture_output=True, timeout=60).returncode == 0:
        pytest.fail("the fault was not caused: a process without override capabilities read a file of mode 0000")
    try:
        for mode in ("--check", "--update"):
            result = run(repo, mode, "recipes", fault=bound_by_permissions)
            assert result.returncode == ExitCode.INPUT_ERROR, said(result)
            assert "snapshots/recipes/a.yaml.frozen.txt: cannot read the snapshot: Permission denied" in result.stdout
            assert "missing" not in said(result)
    finally:
        stored.chmod(0o644)
    assert stored.read_bytes() == accepted


def test_a_recipe_linked_from_outside_the_repository_is_an_input_error_naming_the_link(repo: Path, tmp_path: Path) -> None:
    """A symlink under PATHS to a recipe elsewhere: exit 3, the link named, and the other recipe
    still checked (before: pytest stopped collecting, and the run exited 0 with no recipe)."""
    elsewhere = tmp_path / "elsewhere" / "b.yaml"
    elsewhere.parent.mkdir()
    shutil.copy(BUNDLED, elsewhere)
    (repo / "recipes" / "b.yaml").symlink_to(elsewhere)

    result = run(repo, "--check", "--report", "json", "recipes")
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    outcomes = {entry["recipe"]: entry for entry in json.loads(result.stdout)["recipes"]}
    assert outcomes["recipes/a.yaml"]["status"] == "passed"
    assert outcomes["recipes/b.yaml"]["status"] == "input_error"
    assert outcomes["recipes/b.yaml"]["message"].startswith(
        f"recipes/b.yaml: resolves through a symbolic link to {elsewhere.resolve()}, outside the repository {repo}"
    )

    text = run(repo, "--check", "recipes")
    assert text.returncode == ExitCode.INPUT_ERROR and "recipes/b.yaml: input error" in text.stdout, said(text)
    assert "1 passed, 1 input error" in text.stderr


def test_the_repositorys_own_pytest_run_fails_on_a_recipe_linked_from_outside(repo: Path, tmp_path: Path) -> None:
    """The same link in a repository's own pytest run: that recipe's test fails naming the link,
    the other recipe's passes; collection does not stop."""
    elsewhere = tmp_path / "elsewhere" / "b.yaml"
    elsewhere.parent.mkdir()
    shutil.copy(BUNDLED, elsewhere)
    (repo / "recipes" / "b.yaml").symlink_to(elsewhere)
    with (repo / "pyproject.toml").open("a") as file:
        file.write('\n[tool.pytest.ini_options]\ntestpaths = ["recipes"]\nmmfreeze_recipes = ["recipes"]\n')
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    result = subprocess.run(pytest_run, cwd=repo, env=top_level_environment(), capture_output=True, text=True, timeout=600)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, said(result)
    assert "1 failed, 1 passed" in result.stdout, said(result)
    assert "recipes/b.yaml: resolves through a symbolic link to" in result.stdout
    assert "error during collection" not in result.stdout and "Interrupted" not in result.stdout


@pytest.mark.parametrize("name", ["my [v2]::x.yaml", "with space.yaml", "odd]name.yaml"])
def test_file_arguments_with_pytest_selector_characters_are_recipes(repo: Path, name: str) -> None:
    """A file argument whose name holds `::`, `[`, `]` or a space is a recipe, not a pytest node id:
    `--update` writes its snapshot, `--check` of the file and of its folder pass."""
    folder = repo / "odd [dir]"
    folder.mkdir()
    shutil.copy(BUNDLED, folder / name)
    recipe = f"odd [dir]/{name}"

    update = run(repo, "--update", recipe)
    assert update.returncode == ExitCode.OK, said(update)
    assert f"{recipe}: new snapshot written (snapshots/{recipe}.frozen.txt)" in update.stdout
    assert snapshot_of(repo, recipe).is_file()

    check = run(repo, "--check", "--report", "json", recipe)
    assert check.returncode == ExitCode.OK, said(check)
    assert [(e["recipe"], e["status"]) for e in json.loads(check.stdout)["recipes"]] == [(recipe, "passed")]

    whole_folder = run(repo, "--check", "--report", "json", "odd [dir]")
    assert whole_folder.returncode == ExitCode.OK, said(whole_folder)
    assert [(e["recipe"], e["status"]) for e in json.loads(whole_folder.stdout)["recipes"]] == [(recipe, "passed")]


def test_a_file_argument_handed_to_pytest_as_its_folder_leaves_other_orphans_alone(repo: Path) -> None:
    """A file argument with `[` is collected from its folder (here the repository root, which holds
    the snapshot folder): an orphan elsewhere is neither reported nor deleted by `--update`, as for
    any file argument; checking its own folder reports it (exit 5)."""
    shutil.copy(BUNDLED, repo / "top [v2].yaml")
    orphan = snapshot_of(repo, "recipes/gone.yaml")
    shutil.copy(snapshot_of(repo, "recipes/a.yaml"), orphan)

    update = run(repo, "--update", "top [v2].yaml")
    assert update.returncode == ExitCode.OK and "orphan" not in said(update), said(update)
    assert orphan.is_file() and snapshot_of(repo, "top [v2].yaml").is_file()
    assert run(repo, "--check", "top [v2].yaml").returncode == ExitCode.OK

    folder = run(repo, "--check", "recipes")
    assert folder.returncode == ExitCode.ORPHANED, said(folder)
    assert "snapshots/recipes/gone.yaml.frozen.txt" in folder.stdout


def test_an_orphan_in_a_read_only_folder_is_kept_and_reported_with_the_reason(repo: Path, read_only) -> None:
    """`--update` cannot delete an orphaned snapshot from a read-only folder: it stays, reported as
    orphaned with the reason, and the run fails as for any write that failed (exit 3)."""
    orphan = snapshot_of(repo, "recipes/gone.yaml")
    shutil.copy(snapshot_of(repo, "recipes/a.yaml"), orphan)
    read_only(orphan.parent)

    result = run(repo, "--update", "recipes", fault=bound_by_permissions)
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    assert ("snapshots/recipes/gone.yaml.frozen.txt: orphaned snapshot (recipe recipes/gone.yaml is gone)\n"
            "  cannot delete it: Permission denied") in result.stdout
    assert "1 passed, 1 orphaned" in result.stderr and orphan.is_file()


def test_a_repository_whose_own_path_holds_selector_characters_is_checked(repo: Path, tmp_path: Path) -> None:
    """The check is a plain call chain, not a pytest session: a checkout at `repo [copy]::x` (which
    pytest would read as a node id) checks its recipes like any other (before: a usage error)."""
    copy = tmp_path / "repo [copy]::x"
    shutil.copytree(repo, copy, symlinks=True)
    result = run(copy, "--check", "--report", "json", "recipes")
    assert result.returncode == ExitCode.OK, said(result)
    assert [(e["recipe"], e["status"]) for e in json.loads(result.stdout)["recipes"]] == [("recipes/a.yaml", "passed")]
