"""Training with NVIDIA NeMo AutoModel: the framework runs mmfreeze recipes (``install()``).

The top layer, beside ``cli``: it uses ``freeze``, ``distributed`` and ``guard``, and nothing
below it imports it. Importing this package imports neither torch nor the framework; ``install()``
does. See ``docs/training-with-nemo-automodel.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mmfreeze.nemo.installation import Installation, install, installed, uninstall
    from mmfreeze.nemo.release import SUPPORTED_RELEASES

_EXPORTS = {
    "mmfreeze.nemo.installation": ("Installation", "install", "installed", "uninstall"),
    "mmfreeze.nemo.release": ("SUPPORTED_RELEASES",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
