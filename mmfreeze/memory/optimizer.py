"""The optimizer the framework builds from a recipe's `optimizer:` section, and its state per parameter.

Only optimizers whose state mmfreeze can size exactly, each measured on a stock run
(``tests/nemo/test_memory_exact.py``), are accepted. Per parameter with a gradient, torch 2.14 keeps
tensors shaped like the parameter (its local shard under FSDP2, in its dtype) and 0-dim float32
scalars (on the CPU unless ``fused`` or ``capturable``), one storage each:

- ``Adam``/``AdamW`` (``adam.py``, ``_init_group``): ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq``
  under ``amsgrad``); the scalar ``step``;
- ``SGD`` (``sgd.py``): ``momentum_buffer``, a clone of the first gradient, only when ``momentum`` is not 0;
  no scalar;
- ``RMSprop`` (``rmsprop.py``): ``square_avg``, ``momentum_buffer`` when ``momentum`` > 0, ``grad_avg``
  under ``centered``; ``step``;
- ``NAdam`` (``nadam.py``): ``exp_avg``, ``exp_avg_sq``; ``step`` and ``mu_product``;
- ``Adagrad`` (``adagrad.py``): ``sum``; ``step`` (made when the optimizer is built, for every parameter
  it is given: the framework gives it the trainable ones).

Anything else is refused, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.memory.errors import UnsizableOptimizerError
from mmfreeze.recipes.composite import read_flag

TORCH_OPTIMIZERS = ("Adam", "AdamW", "SGD", "RMSprop", "NAdam", "Adagrad")
"""The torch classes sized (see the module docstring), by ``torch.optim.<name>`` or ``torch.optim.<module>.<name>``."""
OPTIMIZER_TARGETS = {
    **{f"torch.optim.{name}": name for name in TORCH_OPTIMIZERS},
    **{f"torch.optim.{name.lower()}.{name}": name for name in TORCH_OPTIMIZERS},
    "nemo_automodel.components.optim.optimizer.AdamWConfig": "AdamW",
    "nemo_automodel.components.optim.optimizer.AdamConfig": "Adam",
}
"""The `optimizer._target_`s sized: the torch classes, which 0.7.0 builds from any dotted path
(``OptimizerFromFactoryConfig``), and its typed ``AdamConfig`` / ``AdamWConfig``
(``components/optim/optimizer.py``), which build ``torch.optim.Adam`` / ``AdamW``."""


@dataclass(frozen=True, kw_only=True)
class OptimizerState:
    """What one optimizer keeps per trainable parameter."""

    name: str
    """The torch class, ``AdamW``."""
    moments: int
    """Tensors shaped like the parameter's local shard, in its dtype."""
    scalar_bytes: int
    """The 0-dim float32 tensors (``step``, NAdam's ``mu_product``): 4 bytes each, one storage each."""


def optimizer_state(document: Mapping[str, Any], *, source: str | None) -> OptimizerState:
    """The state the recipe's optimizer keeps; refused, naming the key, when it cannot be sized."""
    section = document.get("optimizer")
    if not isinstance(section, Mapping):
        raise UnsizableOptimizerError("the recipe has no optimizer section to size", source=source, key="optimizer")
    target = section.get("_target_")
    name = OPTIMIZER_TARGETS.get(str(target)) if isinstance(target, str) else None
    if name is None:
        known = ", ".join(f"torch.optim.{name}" for name in TORCH_OPTIMIZERS)
        raise UnsizableOptimizerError(f"cannot size the state of {target!r}; mmfreeze sizes {known} (and 0.7's "
                                      "AdamConfig, AdamWConfig)", source=source, key="optimizer._target_")

    def flag(key: str) -> bool:
        return read_flag(section, key, where="optimizer", source=source, error=UnsizableOptimizerError)

    if name in ("Adam", "AdamW"):
        return OptimizerState(name=name, moments=2 + flag("amsgrad"), scalar_bytes=4)
    if name == "SGD":
        return OptimizerState(name=name, moments=int(_number(section, "momentum", source) != 0), scalar_bytes=0)
    if name == "RMSprop":
        return OptimizerState(name=name, moments=1 + (_number(section, "momentum", source) > 0) + flag("centered"),
                              scalar_bytes=4)
    if name == "NAdam":
        return OptimizerState(name=name, moments=2, scalar_bytes=8)
    return OptimizerState(name=name, moments=1, scalar_bytes=4)  # Adagrad


def _number(section: Mapping[str, Any], key: str, source: str | None) -> float:
    value = section.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise UnsizableOptimizerError(f"must be a number of at least 0, got {value!r}", source=source,
                                      key=f"optimizer.{key}")
    return value
