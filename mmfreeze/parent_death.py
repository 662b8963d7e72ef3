"""A signal the kernel sends this process when its parent ends (Linux ``PR_SET_PDEATHSIG``).

Two processes mmfreeze starts must not outlive what started them: the build forkserver
(:mod:`mmfreeze.models.forkserver_exit`) and the command `mmfreeze train` runs
(:mod:`mmfreeze.nemo.launch`). The setting follows the thread that forked the process.
"""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1
"""``prctl`` option (linux/prctl.h)."""


def signal_on_parent_death(signum: signal.Signals) -> None:
    """``signum`` to this process when its parent ends (Linux; elsewhere nothing happens)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
