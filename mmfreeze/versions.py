"""Library versions that change what a snapshot contains."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

# Module trees (and so parameter names) change between transformers releases: the bundled
# snapshots are valid for exactly this one.
SNAPSHOT_TRANSFORMERS_VERSION = "5.24.0"


@cache
def installed_version(package: str) -> str:
    """The installed version of ``package`` without importing it ("missing" when absent).

    Cached: reading package metadata costs milliseconds, and it is asked once per recipe."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "missing"


def transformers_version_warning() -> str | None:
    """A warning when the installed transformers is not the one the snapshots were made with."""
    installed = installed_version("transformers")
    if installed == SNAPSHOT_TRANSFORMERS_VERSION:
        return None
    return (
        f"transformers {installed} is installed, but the bundled snapshots were made with "
        f"{SNAPSHOT_TRANSFORMERS_VERSION}; module trees differ between releases, so frozen sets may "
        f"differ for reasons unrelated to your recipes (pip install transformers=={SNAPSHOT_TRANSFORMERS_VERSION})"
    )
