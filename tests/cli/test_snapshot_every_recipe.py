"""`mmfreeze snapshot` exits 0 only when every recipe under PATHS was checked and matched.

Real faults, never mocks: an address-space limit (``ulimit -v``) under a hand-edited snapshot range,
hand-edited cache records, a symbolic-link loop, folders pytest skips by default, a path through
``..``, a folder that cannot be listed. Each test shows the exit code and the line a user reads;
a recipe that was not checked is always named, never left out of the report.

Every command runs in a subprocess, in a repository made for the test (``test_snapshot_faults.py``).
"""

from __future__ import annotations

import gzip
import json
import resource
import shutil
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.disk_cache import ENTRY_KEY
from mmfreeze.snapshots.frozen_cache import RECORD_FORMAT_VERSION
from tests.cli.test_snapshot_faults import BUNDLED, bound_by_permissions, run, said, snapshot_of

pytestmark = pytest.mark.slow  # each case runs the real command in a subprocess

ADDRESS_SPACE = 1024**3
"""``ulimit -v``: a warm check (no torch) fits in it (0.6 GB, measured); a hundred million names do not."""
HUGE_RANGE = "model.layers.{0..99999999}.mlp.weight"
"""A hand-edited stored line that expands to 10^8 names (about 10 GB as a set)."""


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recipe, a copy of a bundled one, its accepted snapshot, and the warm cache in ``cache/``
    that made it: made once, since every test damages a copy of its own."""
    base = tmp_path_factory.mktemp("accepted")
    root = base / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    shutil.copy(BUNDLED, root / "recipes" / "a.yaml")
    update = run(root, "--update", "--cache-dir", str(base / "cache"), "recipes")
    assert update.returncode == ExitCode.OK, said(update)
    return base


@pytest.fixture
def repo(accepted: Path, tmp_path: Path) -> Path:
    """A copy of ``accepted``: the repository, with its warm cache beside it in ``cache/``."""
    shutil.copytree(accepted, tmp_path, dirs_exist_ok=True)
    return tmp_path / "repo"


def check(repo: Path, *paths: str, fault=None, cwd: Path | None = None):
    return run(cwd or repo, "--check", "--report", "json", "--cache-dir", str(repo.parent / "cache"),
               *(paths or ("recipes",)), fault=fault)


def outcomes(result) -> dict[str, tuple[str, str | None]]:
    return {entry["recipe"]: (entry["status"], entry["message"]) for entry in json.loads(result.stdout)["recipes"]}


def bound(entry: Path, record: dict) -> bytes:
    """``record`` as the entry of its own key (an entry names the key it belongs to)."""
    return gzip.compress(json.dumps({**record, ENTRY_KEY: entry.name.removesuffix(".json.gz")}).encode())


def address_space_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def frozen_set_entries(repo: Path) -> list[Path]:
    entries = sorted((repo.parent / "cache" / "frozen_sets").glob("*.json.gz"))
    assert entries, "the warm cache has no frozen-set entry"
    return entries


def test_out_of_memory_while_checking_a_recipe_is_its_input_error(repo: Path) -> None:
    """A stored snapshot with a hand-edited range {0..99999999}, checked under `ulimit -v` 1 GiB:
    a real MemoryError while comparing. Exit 3, the recipe named with the error (before: the recipe
    was left out of the report and the run exited 0); the other recipe is still checked."""
    shutil.copy(BUNDLED, repo / "recipes" / "b.yaml")
    assert run(repo, "--update", "--cache-dir", str(repo.parent / "cache"), "recipes").returncode == ExitCode.OK
    stored = snapshot_of(repo, "recipes/a.yaml")
    header, body = stored.read_text().split("\n---\n", 1)
    stored.write_text(f"{header}\n---\n{HUGE_RANGE}\n{body}")

    result = check(repo, fault=address_space_limit)
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    assert outcomes(result) == {
        "recipes/a.yaml": ("input_error", "recipes/a.yaml: out of memory (MemoryError)"),
        "recipes/b.yaml": ("passed", None),
    }
    text = run(repo, "--check", "--cache-dir", str(repo.parent / "cache"), "recipes", fault=address_space_limit)
    assert "recipes/a.yaml: out of memory (MemoryError)" in text.stdout, said(text)
    assert "1 passed, 1 input error" in text.stderr


@pytest.mark.parametrize("error_type", ["annotations", "first_line", "KeyError", "NoSuchError",
                                        "MissingModelConfigError", "EnvironmentBuildError", "FrozenSetMismatchError"])
def test_a_cached_failure_of_a_type_no_computation_stores_is_computed_again(repo: Path, error_type: str) -> None:
    """A hand-edited failure record whose `error_type` is no error a computation caches (not an
    mmfreeze error, an unknown name, an error never cached, one whose constructor needs more): the
    record is a miss, the recipe is computed again and passes, and the record is replaced. Before:
    `annotations` and `MissingModelConfigError` dropped the recipe from the report, with exit 0."""
    for entry in frozen_set_entries(repo):
        record = {"error_type": error_type, "message": "hand-edited", "key": None, "failed": True, "format": RECORD_FORMAT_VERSION}
        entry.write_bytes(bound(entry, record))

    result = check(repo)
    assert result.returncode == ExitCode.OK, said(result)
    assert outcomes(result) == {"recipes/a.yaml": ("passed", None)}
    assert all(b'"failed"' not in gzip.decompress(entry.read_bytes()) for entry in frozen_set_entries(repo))


def test_a_cached_failure_of_a_stored_type_is_the_recipes_input_error(repo: Path) -> None:
    """A failure record of a type the computation does store (ModelBuildError) is what a warm run
    reports again without building: exit 3, the recipe named with the stored message."""
    for entry in frozen_set_entries(repo):
        record = {"error_type": "ModelBuildError", "message": "stored failure", "key": "model", "failed": True, "format": RECORD_FORMAT_VERSION}
        entry.write_bytes(bound(entry, record))

    result = check(repo)
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    assert outcomes(result) == {"recipes/a.yaml": ("input_error", "recipes/a.yaml: model: stored failure")}


def test_a_recipe_in_a_symbolic_link_loop_is_named_not_dropped(repo: Path) -> None:
    """Two links pointing at each other look like recipes to discovery (YAML that cannot be read is
    a broken recipe) but pytest collects neither. Before: exit 0 with only the readable recipe
    reported; now each is an input error saying why it was not checked."""
    (repo / "recipes" / "loop1.yaml").symlink_to("loop2.yaml")
    (repo / "recipes" / "loop2.yaml").symlink_to("loop1.yaml")

    result = check(repo)
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    found = outcomes(result)
    assert found["recipes/a.yaml"] == ("passed", None)
    for name in ("loop1", "loop2"):
        status, message = found[f"recipes/{name}.yaml"]
        assert status == "input_error"
        assert message.startswith(f"recipes/{name}.yaml: was not checked: cannot read: [Errno 40] Too many levels of symbolic links")


@pytest.mark.parametrize("folder", [".team", "CVS", "old.egg", "_darcs"])
def test_recipes_in_folders_pytest_skips_by_default_are_checked(repo: Path, folder: str) -> None:
    """pytest's default `norecursedirs` skips `.*`, `*.egg`, `CVS`, `_darcs`, ...; discovery does
    not. Before: such a recipe was found and never checked, and `--check` exited 0; now it is
    checked like any other (here its snapshot is missing: exit 4)."""
    (repo / "recipes" / folder).mkdir()
    shutil.copy(BUNDLED, repo / "recipes" / folder / "b.yaml")

    result = check(repo)
    assert result.returncode == ExitCode.MISSING, said(result)
    assert outcomes(result) == {"recipes/a.yaml": ("passed", None), f"recipes/{folder}/b.yaml": ("missing", None)}


def test_a_path_through_dot_dot_checks_every_recipe_under_it(repo: Path) -> None:
    """`snapshot --check ..` from a subfolder: pytest names files without `..`, so the recipes under
    `sub/..` were never collected, and the run exited 0 having checked none. Now each is checked."""
    sub = repo / "recipes" / "sub"
    sub.mkdir()
    shutil.copy(BUNDLED, sub / "b.yaml")
    assert run(repo, "--update", "--cache-dir", str(repo.parent / "cache"), "recipes").returncode == ExitCode.OK

    result = check(repo, "..", cwd=sub)
    assert result.returncode == ExitCode.OK, said(result)
    assert outcomes(result) == {"recipes/a.yaml": ("passed", None), "recipes/sub/b.yaml": ("passed", None)}


def test_a_folder_that_cannot_be_listed_is_an_input_error_naming_it(repo: Path) -> None:
    """A folder under PATHS of mode 0000 (root's override capabilities dropped): exit 3 and one
    line naming what could not be read, not a traceback (before: exit 1, the code of "changed")."""
    locked = repo / "recipes" / "locked"
    locked.mkdir()
    shutil.copy(BUNDLED, locked / "b.yaml")
    locked.chmod(0o000)
    try:
        result = check(repo, fault=bound_by_permissions)
    finally:
        locked.chmod(0o755)
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    assert "error: recipes/locked/pyvenv.cfg: cannot read: Permission denied" in result.stderr
    assert "Traceback" not in said(result)
