"""Build a real transformers model on the meta device: the one place the project does so.

``with torch.device("meta"): cls._from_config(config)`` allocates no storage, runs the model's own
``__init__`` (real module tree, real parameter names and shapes) and ties weights the way the
checkpoint would. accelerate's ``init_empty_weights`` is avoided on purpose (slow on large configs
and wrong tying), and so is ``no_init_weights`` (skips tying: wrong parameter counts).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mmfreeze.exceptions import ModelBuildError

if TYPE_CHECKING:
    from torch import nn
    from transformers import PretrainedConfig


def resolve_model_class(config: PretrainedConfig, auto_class_name: str) -> type[nn.Module]:
    """The concrete transformers class an Auto class picks for ``config``."""
    import transformers

    auto_class = getattr(transformers, auto_class_name, None)
    if auto_class is None:
        raise ModelBuildError(f"transformers {transformers.__version__} has no {auto_class_name}")
    mapping = auto_class._model_mapping
    if type(config) not in mapping:
        supported = sorted({c.model_type for c in mapping.keys()})
        raise ModelBuildError(
            f"{auto_class_name} cannot build model_type {config.model_type!r}; "
            f"it supports {len(supported)} model types, e.g. {', '.join(supported[:8])}"
        )
    model_class = mapping[type(config)]
    # Some mappings list several candidate classes; transformers picks by config.architectures.
    if isinstance(model_class, (list, tuple)):
        names = set(getattr(config, "architectures", None) or ())
        model_class = next((c for c in model_class if c.__name__ in names), model_class[0])
    return model_class


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Config sanity warnings (token ids outside a sub-vocabulary, ...) are about training, not structure."""
    from transformers.utils import logging as transformers_logging

    previous = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(previous)


def build_meta_model(config: PretrainedConfig, model_class: type[nn.Module]) -> nn.Module:
    """Instantiate ``model_class`` from ``config`` on the meta device (no storage, real names)."""
    import torch

    try:
        with warnings.catch_warnings(), quiet_transformers():
            warnings.simplefilter("ignore")
            with torch.device("meta"):
                return model_class._from_config(config)
    except Exception as error:  # transformers raises many kinds for a bad config
        raise ModelBuildError(
            f"transformers could not build {model_class.__name__} from this config: "
            f"{type(error).__name__}: {error}"
        ) from error
