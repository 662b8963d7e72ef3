"""Library versions that change what a snapshot contains."""

from __future__ import annotations

import hashlib
from functools import cache
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent



@cache
def installed_version(package: str) -> str:
    """The installed version of ``package`` without importing it ("missing" when absent).

    Cached: reading package metadata costs milliseconds, and it is asked once per recipe."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "missing"


def snapshot_release_warning(made_with: Mapping[str, int]) -> str | None:
    """What to tell a user whose snapshots name another transformers release than the installed
    one (``made_with``: release -> how many of the checked snapshots name it). The advice never
    names a release the installed nemo-automodel rejects."""
    installed = installed_version("transformers")
    others = {release: count for release, count in made_with.items() if release != installed}
    if not others:
        return None
    listed = ", ".join(f"{count} with {release}" for release, count in sorted(others.items()))
    return (f"transformers {installed} is installed, but some of your snapshots were made with another release "
            f"({listed}); module trees and parameter names differ between releases, so a snapshot can differ "
            f"for that reason alone. {_advice(sorted(others))}")


def _advice(releases: list[str]) -> str:
    from packaging.requirements import Requirement

    framework = installed_version("nemo-automodel")
    pins = [] if framework == "missing" else [
        requirement for text in requires("nemo-automodel") or ()
        if (requirement := Requirement(text)).name == "transformers" and requirement.marker is None
    ]
    if pins and not all(pins[0].specifier.contains(release) for release in releases):
        return (f"nemo-automodel {framework} requires {pins[0]}, so keep it: review the differences, and accept "
                "them with `mmfreeze snapshot --update` once your training runs on this release")
    return f"Compare like with like where that release is installed (pip install transformers=={releases[-1]})"


@cache
def code_fingerprint(package_dir: Path = PACKAGE_DIR) -> str:
    """A hash of mmfreeze's own Python source, for results that depend on our code as well as on
    the libraries: a frozen set computed by one resolver table or freezing engine is never served
    to another. Every file counts, so no list of "relevant" files can go stale."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()
