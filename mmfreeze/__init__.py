"""mmfreeze: which parameters every multimodal recipe freezes, and a safe path to say it explicitly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmfreeze.guard.verify import verify_frozen_set

__version__ = "0.1.0"
__all__ = ["verify_frozen_set"]


def __getattr__(name: str) -> Any:
    # Imported on first use: `import mmfreeze` (and the CLI) stays free of the guard's modules.
    if name == "verify_frozen_set":
        from mmfreeze.guard.verify import verify_frozen_set

        return verify_frozen_set
    raise AttributeError(f"module 'mmfreeze' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
