from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze import versions


def test_no_warning_with_the_transformers_the_snapshots_were_made_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "installed_version", lambda package: versions.SNAPSHOT_TRANSFORMERS_VERSION)
    assert versions.transformers_version_warning() is None


def test_another_transformers_release_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "installed_version", lambda package: "9.9.9")
    message = versions.transformers_version_warning()
    assert "9.9.9" in message and f"transformers=={versions.SNAPSHOT_TRANSFORMERS_VERSION}" in message


def test_the_readme_pins_the_snapshot_version_and_pyproject_allows_both_tested_releases() -> None:
    """The main environment (the README's commands, CI) installs the release the snapshots are made
    with; pyproject.toml states the tested range, which also holds nemo-automodel 0.7.0's pin."""
    import tomllib

    from packaging.requirements import Requirement

    from tests.conftest import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    assert f"transformers=={versions.SNAPSHOT_TRANSFORMERS_VERSION}" in readme
    dependencies = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (transformers,) = [Requirement(d) for d in dependencies if Requirement(d).name == "transformers"]
    assert transformers.specifier.contains(versions.SNAPSHOT_TRANSFORMERS_VERSION)
    assert transformers.specifier.contains("5.18.0")


def test_code_fingerprint_changes_with_any_source_file_and_only_then(tmp_path: Path) -> None:
    (tmp_path / "resolver").mkdir()
    (tmp_path / "resolver" / "table.py").write_text("ROLES = {'vision': 'tower'}\n")
    (tmp_path / "notes.txt").write_text("not code")
    first = versions.code_fingerprint(tmp_path)
    (tmp_path / "notes.txt").write_text("still not code")
    assert versions.code_fingerprint.__wrapped__(tmp_path) == first
    (tmp_path / "resolver" / "table.py").write_text("ROLES = {'vision': 'projector'}\n")
    assert versions.code_fingerprint.__wrapped__(tmp_path) != first
    (tmp_path / "resolver" / "table.py").write_text("ROLES = {'vision': 'tower'}\n")
    (tmp_path / "new_rule.py").write_text("")
    assert versions.code_fingerprint.__wrapped__(tmp_path) != first
