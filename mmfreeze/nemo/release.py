"""Which nemo-automodel releases the integration supports, stated once.

The integration replaces named functions inside the framework (:mod:`mmfreeze.nemo.hooks`), so it
is exact for the releases whose code it was written against and checked on
(:data:`mmfreeze.boundary.releases.INTEGRATION_RELEASES`), and refused on any other: a release that moved
or renamed a hook point would otherwise train something else. Releases before 0.7 are refused
too (:data:`mmfreeze.boundary.releases.MISREAD_BEFORE_07` says what they would do).
"""

from __future__ import annotations

from packaging.version import Version

from mmfreeze.boundary.names import DISTRIBUTION
from mmfreeze.exceptions import IntegrationError
from mmfreeze.boundary.releases import INTEGRATION_RELEASES as SUPPORTED_RELEASES
from mmfreeze.boundary.releases import MISREAD_BEFORE_07
from mmfreeze.versions import installed_version

def check_supported_release() -> str:
    """The installed nemo-automodel version, when the integration supports it; else an error saying why."""
    installed = installed_version(DISTRIBUTION)
    if installed in SUPPORTED_RELEASES:
        return installed
    supported = ", ".join(SUPPORTED_RELEASES)
    if installed == "missing":
        raise IntegrationError(
            f"{DISTRIBUTION} is not installed; the integration supports {supported} "
            f"(pip install {DISTRIBUTION}=={SUPPORTED_RELEASES[-1]})", key="mmfreeze.nemo")
    hazard = f"; {MISREAD_BEFORE_07}" if Version(installed) < Version("0.7") else ""
    raise IntegrationError(
        f"{DISTRIBUTION} {installed} is installed, but the integration supports only {supported}; "
        f"nothing was patched{hazard}", key="mmfreeze.nemo")
