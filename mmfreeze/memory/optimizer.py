"""The optimizer the framework builds from a recipe's `optimizer:` section, and its state per parameter.

Only optimizers whose state mmfreeze can size exactly are accepted (``torch/optim/adam.py``,
``Adam._init_group``; ``AdamW`` subclasses ``Adam``): per parameter with a gradient, ``exp_avg``
and ``exp_avg_sq`` (``max_exp_avg_sq`` too under ``amsgrad``) as ``zeros_like`` of the parameter
(its local shard under FSDP2, in its dtype), and ``step``, a 0-dim float32 tensor (on the CPU unless
``fused`` or ``capturable``). Anything else is refused, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.memory.errors import UnsizableOptimizerError

ADAM_TARGETS = {
    "torch.optim.AdamW": "AdamW",
    "torch.optim.Adam": "Adam",
    "torch.optim.adamw.AdamW": "AdamW",
    "torch.optim.adam.Adam": "Adam",
    "nemo_automodel.components.optim.optimizer.AdamWConfig": "AdamW",
    "nemo_automodel.components.optim.optimizer.AdamConfig": "Adam",
}
"""The `optimizer._target_`s that build ``torch.optim.Adam`` / ``AdamW`` in nemo-automodel 0.7.0
(its typed configs ``AdamConfig`` / ``AdamWConfig`` in ``components/optim/optimizer.py`` build them too)."""


@dataclass(frozen=True, kw_only=True)
class OptimizerState:
    """What one optimizer keeps per trainable parameter."""

    name: str
    """The torch class, ``AdamW``."""
    moments: int
    """Tensors shaped like the parameter's local shard, in its dtype: 2, or 3 under ``amsgrad``."""
    step_bytes: int = 4
    """The 0-dim float32 ``step`` tensor, one storage per parameter."""


def optimizer_state(document: Mapping[str, Any], *, source: str | None) -> OptimizerState:
    """The state the recipe's optimizer keeps; refused, naming the key, when it cannot be sized."""
    section = document.get("optimizer")
    if not isinstance(section, Mapping):
        raise UnsizableOptimizerError("the recipe has no optimizer section to size", source=source, key="optimizer")
    target = section.get("_target_")
    name = ADAM_TARGETS.get(str(target)) if isinstance(target, str) else None
    if name is None:
        known = ", ".join(sorted(ADAM_TARGETS))
        raise UnsizableOptimizerError(f"cannot size the state of {target!r}; mmfreeze sizes {known}",
                                      source=source, key="optimizer._target_")
    amsgrad = section.get("amsgrad", False)
    if not isinstance(amsgrad, bool):
        raise UnsizableOptimizerError(f"must be true or false, got {amsgrad!r}", source=source,
                                      key="optimizer.amsgrad")
    return OptimizerState(name=name, moments=3 if amsgrad else 2)
