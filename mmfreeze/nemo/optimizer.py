"""``OptimizerConfig.build`` under the integration: selector rate entries resolved, then the guard armed.

Every optimizer config class of 0.7.0 with a ``build`` of its own is replaced by the same wrapper
(:data:`mmfreeze.nemo.installation.BUILD_OPTIMIZER`): it resolves the recipe's selector entries of
``param_group_overrides`` on the model (:mod:`mmfreeze.nemo.rates`), lets the framework's own
``build`` make the optimizers, and arms each with the guard (:mod:`mmfreeze.nemo.guard`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mmfreeze.nemo.context import RunContext
from mmfreeze.nemo.guard import arm_guard, guarded_part
from mmfreeze.nemo.rates import with_resolved_rates


def build_hook(original: Callable[..., list[Any]], context: RunContext) -> Callable[..., list[Any]]:
    """``OptimizerConfig.build`` with the recipe's selector entries resolved and the guard armed."""

    @functools.wraps(original)  # keeps the framework's own reachable (``__wrapped__``) for hook checks
    def build_with_mmfreeze(self: Any, model: Any, *args: Any, **kwargs: Any) -> list[Any]:
        checked = guarded_part(model, context)  # refuse before building, as the guard cannot run
        optimizers = original(with_resolved_rates(self, model, context), model, *args, **kwargs)
        if checked is not None:
            for optimizer in optimizers:
                arm_guard(optimizer, checked, context)
        return optimizers

    return build_with_mmfreeze
