"""A package's exports imported on first use (PEP 562), so importing the package stays cheap."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, tuple[str, ...]],
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The package's ``__getattr__``, ``__dir__`` and ``__all__``: ``modules`` maps each module to
    the names the package exports from it."""
    exports = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *exports])

    return __getattr__, __dir__, sorted(exports)
