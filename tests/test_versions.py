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


def test_the_pin_in_pyproject_matches_the_snapshot_version() -> None:
    from tests.conftest import REPO_ROOT

    assert f'"transformers=={versions.SNAPSHOT_TRANSFORMERS_VERSION}"' in (REPO_ROOT / "pyproject.toml").read_text()


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
