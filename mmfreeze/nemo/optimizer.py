"""``OptimizerConfig.build`` under the integration: selector rate entries resolved on the model.

Patched only for a recipe whose `param_group_overrides` names tensors by selector (``role:``,
``layers:``, ...), which 0.7 cannot read: every optimizer config class of 0.7.0 with a ``build`` of
its own is replaced by the same wrapper (:data:`mmfreeze.nemo.installation.BUILD_OPTIMIZER`), which
resolves those entries on the model into the framework's own patterns (:mod:`mmfreeze.nemo.rates`)
and lets the framework's ``build`` make the optimizers. The guard does not need it: it arms
through torch's hooks (:mod:`mmfreeze.guard.step_zero`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mmfreeze.nemo.context import RunContext
from mmfreeze.nemo.rates import with_resolved_rates


def build_hook(original: Callable[..., list[Any]], context: RunContext) -> Callable[..., list[Any]]:
    """``OptimizerConfig.build`` with the recipe's selector entries resolved."""

    @functools.wraps(original)  # keeps the framework's own reachable (``__wrapped__``) for hook checks
    def build_with_mmfreeze(self: Any, model: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return original(with_resolved_rates(self, model, context), model, *args, **kwargs)

    return build_with_mmfreeze
