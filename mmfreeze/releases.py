"""The nemo-automodel releases whose trainability rules mmfreeze reproduces.

Two releases differ in ways a frozen set can show (both read from the framework's code):

- **0.7** parses `freeze_config` strictly (six keys, real booleans, `freeze_modules` /
  `unfreeze_modules` selectors) and compiles a LoRA wildcard so that ``*.layers.1.*`` does not
  also select ``layers.10``;
- **0.6** read `freeze_config` with ``dict.get`` (other keys ignored, values by truthiness) and
  compiled every ``*`` to ``.*``.

A recipe runs under 0.7 unless 0.7 rejects it and 0.6 accepts it: such a recipe can only have
trained on 0.6, so its frozen set is 0.6's (`mmfreeze.freeze.framework.detect_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Release = Literal["0.7", "0.6"]
CURRENT_RELEASE: Release = "0.7"


@dataclass(frozen=True, kw_only=True)
class FrameworkRules:
    """The release whose rules a recipe's frozen set follows, and why when it is not the current one."""

    release: Release = CURRENT_RELEASE
    reason: str = ""

    def describe(self) -> str:
        text = f"nemo-automodel {self.release}"
        return f"{text} ({self.reason})" if self.reason else text


CURRENT_RULES = FrameworkRules()


INTEGRATION_RELEASES: tuple[str, ...] = ("0.7.0",)
"""The nemo-automodel versions mmfreeze's integration (``mmfreeze.nemo.install()``) patches; it
refuses every other one."""
MISREAD_BEFORE_07 = (
    "nemo-automodel before 0.7 reads freeze_config with dict.get and defaults freeze_vision_tower to "
    "true, so it does not reject a (modality, role) section but misreads it: the vision tower is frozen "
    "whatever the section says, and nothing else is"
)
"""The hazard of running a new-vocabulary section on a pre-0.7 release without the integration."""
