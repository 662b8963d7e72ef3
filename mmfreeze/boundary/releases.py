"""The nemo-automodel releases whose trainability rules mmfreeze reproduces.

Two releases differ in ways a frozen set can show (both read from the framework's code):

- **0.7** parses `freeze_config` strictly (six keys, real booleans, `freeze_modules` /
  `unfreeze_modules` selectors) and compiles a LoRA wildcard so that ``*.layers.1.*`` does not
  also select ``layers.10``;
- **0.6** read `freeze_config` with ``dict.get`` (other keys ignored, values by truthiness) and
  compiled every ``*`` to ``.*``. mmfreeze reports a key 0.6 ignored as an input error all the same:
  a misspelt key trained as if absent.

The release is the repository's, never guessed per recipe (a typo that 0.6 ignored and 0.7 rejects
is a typo, not a sign of 0.6): ``[tool.mmfreeze] framework``, else the installed nemo-automodel's,
else the newest supported (:func:`framework_rules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from mmfreeze.boundary.names import DISTRIBUTION, transformers_pin
from mmfreeze.versions import installed_version

Release = Literal["0.7", "0.6"]
RELEASES: tuple[str, ...] = get_args(Release)
CURRENT_RELEASE: Release = "0.7"


@dataclass(frozen=True, kw_only=True)
class FrameworkRules:
    """The release whose rules a repository's frozen sets follow, and where that came from."""

    release: Release = CURRENT_RELEASE
    reason: str = "the newest release mmfreeze supports"

    def describe(self) -> str:
        """As a snapshot header names it (the reason is not behaviour: it stays out)."""
        return f"nemo-automodel {self.release}"


CURRENT_RULES = FrameworkRules()
DECLARE_06 = 'a repository that trains on nemo-automodel 0.6 declares it: framework = "0.6" under [tool.mmfreeze]'


def framework_rules(declared: Release | None) -> FrameworkRules:
    """The repository's release: ``declared`` (``[tool.mmfreeze] framework``), else the installed
    nemo-automodel's (read from package metadata), else the newest supported one."""
    if declared is not None:
        return FrameworkRules(release=declared, reason="[tool.mmfreeze] framework")
    installed = installed_version(DISTRIBUTION)
    release = ".".join(installed.split(".")[:2])
    if release in RELEASES:
        return FrameworkRules(release=release, reason=f"nemo-automodel {installed} is installed")  # type: ignore[arg-type]
    if installed != "missing":
        return FrameworkRules(reason=f"nemo-automodel {installed} is installed, whose rules mmfreeze does not know; "
                                     f"the newest it supports, {CURRENT_RELEASE}, applies")
    return CURRENT_RULES


INTEGRATION_RELEASES: tuple[str, ...] = ("0.7.0",)
"""The nemo-automodel versions mmfreeze's integration (``mmfreeze.nemo.install()``) patches; it
refuses every other one."""
MISREAD_BEFORE_07 = (
    "nemo-automodel before 0.7 reads freeze_config with dict.get and defaults freeze_vision_tower to "
    "true, so it does not reject a (modality, role) section but misreads it: the vision tower is frozen "
    "whatever the section says, and nothing else is"
)
"""The hazard of running a new-vocabulary section on a pre-0.7 release without the integration."""


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

    pin = None if installed_version(DISTRIBUTION) == "missing" else transformers_pin()
    if pin is not None and not all(Requirement(pin).specifier.contains(release) for release in releases):
        return (f"{DISTRIBUTION} {installed_version(DISTRIBUTION)} requires {pin}, so keep it: review the differences, "
                "and accept them with `mmfreeze snapshot --update` once your training runs on this release")
    return f"Compare like with like where that release is installed (pip install transformers=={releases[-1]})"
