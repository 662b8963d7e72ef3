"""Imports (and builds) of torch, transformers and the framework without what their dependencies print.

torchao registers its enums with torch's pytree, which warns that this is deprecated; a kernel package
asks torch for a CUDA runtime this machine does not have; megatron-fsdp warns that Transformer Engine is
missing. Nothing a command reports depends on them. `mmfreeze --verbose` shows them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterable, Iterator

from mmfreeze.settings import VERBOSE_ENV

IMPORT_NOISE_LOGGERS = ("torch.utils._pytree", "torch.utils.cpp_extension")
"""The loggers those imports write to."""


@contextlib.contextmanager
def quiet_imports() -> Iterator[None]:
    """Python warnings, and those loggers below ERROR, dropped while the block imports."""
    if os.environ.get(VERBOSE_ENV):
        yield
        return
    with warnings.catch_warnings(), log_levels(IMPORT_NOISE_LOGGERS, logging.ERROR):
        warnings.simplefilter("ignore")
        yield


@contextlib.contextmanager
def log_levels(names: Iterable[str], level: int) -> Iterator[None]:
    """The loggers ``names`` at ``level`` while the block runs, then back at their own levels."""
    before = {name: logging.getLogger(name).level for name in names}
    _set_levels(dict.fromkeys(before, level))
    try:
        yield
    finally:
        _set_levels(before)


def quiet_workers() -> None:
    """In a build worker (a process of mmfreeze's own, which only builds and probes): those loggers
    below ERROR for good, since a probe's forward reaches the same packages again."""
    if not os.environ.get(VERBOSE_ENV):
        _set_levels(dict.fromkeys(IMPORT_NOISE_LOGGERS, logging.ERROR))


def _set_levels(levels: dict[str, int]) -> None:
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
