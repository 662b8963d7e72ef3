"""Runtime guard: hold a live model and its optimizer against the recipe's accepted snapshot.

A snapshot says what a recipe *should* train; whether a run *does* depends on everything after
the recipe is read (PEFT injection, checkpoint loading, embedding resizing, FSDP2 wrapping,
``torch.compile``, code that sets ``requires_grad``). :func:`verify_frozen_set` reads the live
model's canonical parameter names and flags (``live``), finds and reads the snapshot the way
`mmfreeze snapshot` does (``locate``), compares the frozen sets (``compare``) and the optimizer's
param groups (``optimizer``), shares every rank's verdict without a collective (``ranks``: the
design for FSDP2, where ``requires_grad`` is per rank), and raises
:class:`~mmfreeze.exceptions.FrozenSetMismatchError` with a message grouped by resolved module
(``labels``, ``message``). ``pytest_helpers`` turns it into a test assertion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mmfreeze.guard.report import GuardReport, VerifiedFrozenSet
    from mmfreeze.guard.verify import verify_frozen_set

# Lazy: arming the step-0 guard (``step_zero``) in every process a launch starts must not import
# the snapshot reader; the first step does.
_EXPORTS = {
    "mmfreeze.guard.report": ("GuardReport", "VerifiedFrozenSet"),
    "mmfreeze.guard.verify": ("verify_frozen_set",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
