from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze import versions
from mmfreeze.boundary import releases


def test_no_warning_when_every_snapshot_names_the_installed_release() -> None:
    assert releases.snapshot_release_warning({}) is None
    assert releases.snapshot_release_warning({versions.installed_version("transformers"): 3}) is None


@pytest.mark.skipif(versions.installed_version("nemo-automodel") == "missing", reason="needs nemo-automodel's metadata")
def test_the_advice_never_names_a_release_the_installed_framework_rejects() -> None:
    """Both CI environments have nemo-automodel 0.7.0, which pins transformers==5.18.0."""
    message = releases.snapshot_release_warning({"4.0.0": 2})
    assert "your snapshots" in message and "2 with 4.0.0" in message
    assert "nemo-automodel 0.7.0 requires transformers==5.18.0, so keep it" in message
    assert "pip install" not in message


def test_without_a_framework_the_advice_is_to_compare_under_the_snapshots_release(monkeypatch: pytest.MonkeyPatch) -> None:
    # A mock: nemo-automodel cannot be uninstalled from the shared test environment.
    real = versions.installed_version
    monkeypatch.setattr(releases, "installed_version", lambda package: "missing" if package == "nemo-automodel" else real(package))
    message = releases.snapshot_release_warning({"4.0.0": 2, "4.1.0": 1})
    assert "(1 with 4.1.0, 2 with 4.0.0)" not in message and "(2 with 4.0.0, 1 with 4.1.0)" in message
    assert message.endswith("(pip install transformers==4.1.0)")


def test_the_readme_pins_the_snapshot_version_and_pyproject_allows_both_tested_releases() -> None:
    """The README's main job installs the release the snapshots are made with (nemo-automodel
    0.7.0's pin); pyproject.toml states the tested range, which also holds the test environment's."""
    import tomllib

    from packaging.requirements import Requirement

    from tests.conftest import MAIN_TRANSFORMERS, REPO_ROOT, SNAPSHOT_TRANSFORMERS_VERSION

    readme = (REPO_ROOT / "README.md").read_text()
    assert f"transformers=={SNAPSHOT_TRANSFORMERS_VERSION}" in readme
    headers = {line for path in (REPO_ROOT / "snapshots").rglob("*.frozen.txt")
               for line in path.read_text().splitlines() if line.startswith("transformers: ")}
    assert headers == {f"transformers: {SNAPSHOT_TRANSFORMERS_VERSION}"}, "the committed snapshots name that release"
    dependencies = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (transformers,) = [Requirement(d) for d in dependencies if Requirement(d).name == "transformers"]
    assert transformers.specifier.contains(SNAPSHOT_TRANSFORMERS_VERSION)
    assert transformers.specifier.contains(MAIN_TRANSFORMERS)


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
