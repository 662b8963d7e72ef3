"""Terminal output: rich consoles for results and for diagnostics, with user text escaped."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape

from mmfreeze.disk_cache import DiskCache
from mmfreeze.exceptions import MmfreezeError

PIPED_WIDTH = 1_000
"""Output that is not a terminal is read by tools and logs: tables get room for whole module
paths instead of rich's 80-column default, which cuts them."""


def _console(stream: TextIO, *, stderr: bool) -> Console:
    width = None if stream.isatty() else PIPED_WIDTH
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


out = _console(sys.stdout, stderr=False)
err = _console(sys.stderr, stderr=True)


def report_error(error: MmfreezeError) -> None:
    """One line per error; the text quotes user input, so it is escaped, never read as markup."""
    err.print(f"[bold red]error[/]: {escape(str(error))}")


def warn(message: str) -> None:
    err.print(f"[bold yellow]warning[/]: {escape(message)}")


def warn_on_cache_write(cache: DiskCache[Any]) -> None:
    message = cache.write_warning()
    if message is not None:
        warn(message)


