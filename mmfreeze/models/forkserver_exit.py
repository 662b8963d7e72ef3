"""Preloaded first by the build forkserver: the forkserver dies with the process that started it.

CPython's forkserver stops when every holder of its "alive" pipe is gone, but the build workers
hold that pipe too, and they wait for work from a queue they also hold the writing end of: a
command killed by a CI timeout (SIGTERM) or SIGKILL left the forkserver and its workers running,
at 1.4-2.2 GB. Linux ``PR_SET_PDEATHSIG`` has the kernel send SIGKILL to the forkserver as soon
as its parent ends, whatever that was doing (importing torch for seconds, or serving forks); the
workers watch the command's own pipe (:func:`mmfreeze.models.batch.exit_with_parent`).

Importing this module is what sets it: the forkserver imports its preload list, by name, and
nothing else. :func:`mmfreeze.models.batch._forkserver` names it only when the main thread starts
the server: the signal follows the thread that forked, and another thread's end would kill a
server the process still uses. A parent that died before the setting was made is noticed by the
server itself, through its alive pipe, once the imports are done.
"""

from __future__ import annotations

import signal

from mmfreeze.parent_death import signal_on_parent_death

signal_on_parent_death(signal.SIGKILL)
