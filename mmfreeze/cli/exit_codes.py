"""Exit codes of every mmfreeze command. Distinct, documented, stable: CI scripts branch on them."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    CHANGED = 1
    """A snapshot differs from its recipe, or `migrate --check` would rewrite a file."""
    USAGE = 2
    """Bad command-line usage (click's own code)."""
    INPUT_ERROR = 3
    """A recipe or file could not be read, built or validated; the others were still processed."""
    MISSING = 4
    """A recipe has no stored snapshot yet."""
    ORPHANED = 5
    """A stored snapshot has no recipe any more."""
    REJECTED = 6
    """`explain --check`: setup validation rejects the recipe's distributed policy."""
    VERSION_ONLY = 7
    """Snapshots differ only in the release their header names (transformers, framework): no frozen
    name, adapter or other field moved."""
    RENAMED = 8
    """Snapshots differ in the release their header names, and that release's module tree renamed
    some tensors (through transformers' conversion mapping); every tensor is as trainable as before."""
    PROBE_ONLY = 9
    """As 7 or 8, and that release also changed how a data mix was probed for reachability (another
    method, or none because its forward raises): no tensor's trainability, adapter, rate or
    reachability moved."""
    BUILDER_SWITCH = 10
    """This environment builds another class than the one a snapshot describes (the framework's own
    class against transformers', or the reverse): the snapshot cannot be checked here. Check it where
    it was made, the environment its header names; `--accept-release` never writes it."""
    INTERRUPTED = 130
    """SIGINT (Ctrl-C) stopped the run before every recipe was checked: 128 + the signal, as a shell
    reports a process the signal ended."""


def exit_code_help(*codes: ExitCode) -> str:
    """The ``--help`` line of one command: only the codes it can return."""
    return "Exit codes: " + ", ".join(f"{code.value} {code.name.lower().replace('_', ' ')}" for code in codes)
