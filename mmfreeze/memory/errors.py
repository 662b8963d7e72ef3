"""What the memory model refuses to size, each naming the recipe key: never a guessed figure."""

from __future__ import annotations

from mmfreeze.exceptions import MmfreezeError


class MemoryModelError(MmfreezeError):
    """A recipe whose per-rank memory mmfreeze cannot state exactly."""


class UnsizableOptimizerError(MemoryModelError):
    """The recipe's optimizer keeps state mmfreeze does not know how to size."""


class UnknownDtypeError(MemoryModelError):
    """The dtype the framework loads a tensor in cannot be known from the recipe."""


class UndividableLayoutError(MemoryModelError):
    """The world size does not fit the recipe's distributed sizes (or a layout that is not modelled)."""
