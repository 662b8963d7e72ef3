"""Library versions that change what a snapshot contains."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
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
