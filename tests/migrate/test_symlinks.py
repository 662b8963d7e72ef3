"""`mmfreeze migrate` and symbolic links, with real links in a repository made for the test (click's
CliRunner): a link whose target is inside the repository stays a link and its target is rewritten;
a link to a file outside it is refused, named, and fails the run; the other files are still written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pre_migration"
LEGACY = FIXTURES / "vlm_finetune" / "qwen2_vl" / "qwen2_vl_7b_latex_ocr.yaml"
LEGACY_KEY = "freeze_vision_tower"
"""In the legacy recipe, gone from its migrated text."""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository declaring nemo-automodel 0.6, as the pre-migration corpus does, run from its root."""
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    shutil.copy(FIXTURES / "pyproject.toml", root / "pyproject.toml")
    monkeypatch.chdir(root)
    return root


def migrate(*args: str):
    return CliRunner().invoke(cli, ["migrate", *args])


def test_a_link_inside_the_repository_stays_a_link_and_its_target_is_migrated(repo: Path) -> None:
    """`migrate recipes` -> exit 0; `recipes/in.yaml` is still the same relative link, the shared
    file it points to is migrated, and a second `--check` has nothing left to do."""
    shared = repo / "shared" / "latex.yaml"
    shared.parent.mkdir()
    shutil.copy(LEGACY, shared)
    link = repo / "recipes" / "in.yaml"
    link.symlink_to(Path("..") / "shared" / "latex.yaml")

    result = migrate("recipes")
    assert result.exit_code == ExitCode.OK, result.output
    assert "recipes/in.yaml: needs-escape-hatch, rewritten" in result.output
    assert link.is_symlink() and str(link.readlink()) == "../shared/latex.yaml"
    assert LEGACY_KEY not in shared.read_text() and LEGACY_KEY in LEGACY.read_text()
    assert sorted(path.name for path in shared.parent.iterdir()) == ["latex.yaml"]  # no temporary left

    again = migrate("recipes", "--check")
    assert again.exit_code == ExitCode.OK, again.output


def test_a_link_to_a_file_outside_the_repository_is_refused_naming_the_link(repo: Path, tmp_path: Path) -> None:
    """`migrate recipes` with a link to a file elsewhere -> exit 3 and an error naming the link and
    where it leads; the outside file and the link are untouched, the regular recipe beside it is
    still migrated."""
    elsewhere = tmp_path / "elsewhere" / "latex.yaml"
    elsewhere.parent.mkdir()
    shutil.copy(LEGACY, elsewhere)
    before = elsewhere.read_bytes()
    link = repo / "recipes" / "out.yaml"
    link.symlink_to(elsewhere)
    regular = repo / "recipes" / "regular.yaml"
    shutil.copy(LEGACY, regular)

    result = migrate("recipes")
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert (f"error: recipes/out.yaml: not written: it resolves through a symbolic link to {elsewhere.resolve()}, "
            f"outside the repository {repo}") in result.output
    assert elsewhere.read_bytes() == before
    assert link.is_symlink() and link.readlink() == elsewhere
    assert LEGACY_KEY not in regular.read_text()


def test_a_recipe_reached_through_a_linked_folder_outside_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    """The file itself is no link, but its folder is, and leads outside: the same refusal."""
    outside = tmp_path / "team-shared"
    outside.mkdir()
    shutil.copy(LEGACY, outside / "latex.yaml")
    before = (outside / "latex.yaml").read_bytes()
    (repo / "recipes" / "shared").symlink_to(outside, target_is_directory=True)

    result = migrate("recipes")
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert "error: recipes/shared/latex.yaml: not written: it resolves through a symbolic link to" in result.output
    assert (outside / "latex.yaml").read_bytes() == before
