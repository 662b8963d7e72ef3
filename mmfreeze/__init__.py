"""mmfreeze: which parameters every multimodal recipe freezes, and a safe path to say it explicitly.

Layers, lowest first. A module imports only from its own layer or lower ones, and subpackages form
no cycle (``tests/test_layers.py`` checks both):

1. ``recipes``: reads YAML recipes into plain validated data.
2. ``models``: turns a model config and an Auto class into a meta-device model and its pure-data
   structure; it never reads recipes.
3. ``resolver``: says which submodules are the towers, projectors and language model, purely over
   structures, and turns recipe overrides into its specs.
4. ``freeze``: computes and applies frozen sets from sections its callers parsed, and holds the
   recipe-to-model glue (``freeze.recipe_model``).
5. ``snapshots``, ``migrate``, ``distributed``, ``explain``, ``guard``, ``reachability``, ``memory``: the features,
   and ``workspace``, the run context one command assembles once and its features share.
6. ``cli``, ``nemo`` (the integration with NeMo AutoModel), and this package's own exports.

Foundations sit below every layer: any layer may import them, and they import no layer. They are
the top-level modules ``exceptions``, ``atomic``, ``regular_files``, ``parent_death``,
``disk_cache``, ``versions``, ``settings``, ``pr_comment``, ``counts``, ``suggest`` and
``lazy_exports``, the framework boundary ``boundary`` (every name mmfreeze knows nemo-automodel
by: packages, releases, pins, hook points), and the bundled ``registry`` data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmfreeze.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mmfreeze.guard.verify import verify_frozen_set

__version__ = "0.1.0"
# Imported on first use: `import mmfreeze` (and the CLI) stays free of the guard's modules.
_EXPORTS = {"mmfreeze.guard.verify": ("verify_frozen_set",)}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
