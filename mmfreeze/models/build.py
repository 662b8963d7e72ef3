"""Build a real model on the meta device: the one place the project does so.

``with torch.device("meta"): cls._from_config(config)`` allocates no storage and runs the model's
own ``__init__`` (real module tree, real parameter names and shapes). Weights are never initialised
(:func:`constructed`: their values are never read) and are tied afterwards the way the checkpoint
would be. accelerate's ``init_empty_weights`` is avoided on purpose (slow on large configs and wrong
tying).

The framework's own classes (:mod:`mmfreeze.models.framework_build`) are built as NeMo AutoModel
builds them, ``model_cls(config)`` (``model_init.__init_model``), under the same meta device.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from mmfreeze.exceptions import EnvironmentBuildError, ModelBuildError, first_line

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


def transformers_builds(model_type: object, auto_class_name: str) -> bool:
    """Whether this transformers has a class for ``model_type`` under the Auto class (read past
    registrations, as :func:`transformers_config_class`)."""
    import transformers

    auto_class = getattr(transformers, auto_class_name, None)
    return (transformers_config_class(model_type) is not None
            and auto_class is not None and model_type in auto_class._model_mapping._model_mapping)


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


def build_transformers_config(config: Mapping[str, Any]) -> PretrainedConfig:
    """A transformers config object from config.json content."""
    model_type = config.get("model_type")
    config_class = transformers_config_class(model_type)
    if config_class is None:
        raise ModelBuildError(f"config.json has model_type {model_type!r}, which this transformers does not know"
                              + custom_code_advice(config))
    return config_from_dict(config_class, config, maker="transformers")


def config_from_dict(config_class: type[PretrainedConfig], config: Mapping[str, Any], maker: str) -> PretrainedConfig:
    """``config_class`` made from config.json content (a copy: 5.18 pops nested keys); ``maker`` names
    it in the error when it rejects the content."""
    import copy

    try:
        with quiet_transformers():
            return config_class.from_dict(copy.deepcopy(dict(config)))
    except Exception as error:  # config classes validate with many exception types
        raise ModelBuildError(f"{maker} rejects the config: {type(error).__name__}: {error}") from error


def custom_code_advice(config: Mapping[str, Any]) -> str:
    """For a checkpoint whose config.json names its own code (``auto_map``): that mmfreeze never runs
    it, and what would make the checkpoint buildable, as the tail of a message (``": it is ..."``);
    ``""`` for any other."""
    auto_map = config.get("auto_map")
    if not isinstance(auto_map, Mapping):
        return ""
    code = ", ".join(f"{name} -> {value}" for name, value in auto_map.items())
    return (f": it is a custom-code checkpoint (config.json auto_map: {code}), and mmfreeze never runs a checkpoint's "
            "code. To snapshot it, put a config.json in the repository's configs folder whose model_type and "
            "architectures name a class transformers or nemo-automodel has (the checkpoint's port), or exclude the "
            "recipe ([tool.mmfreeze] exclude)")


def transformers_config_class(model_type: object) -> type[PretrainedConfig] | None:
    """transformers' own config class for ``model_type``, or None where it has none.

    Read past ``AutoConfig.register``: importing nemo-automodel's registry registers the framework's
    config classes over some of transformers' (deepseek_v4, minimax_m3_vl), so ``CONFIG_MAPPING``
    would make a transformers build depend on whether a framework build ran earlier in the process.
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    name = CONFIG_MAPPING._mapping.get(model_type) if isinstance(model_type, str) else None  # built-ins only
    try:
        return getattr(transformers, name) if name is not None else None
    except ImportError as error:  # transformers imports the model's module, which may need timm
        raise environment_error(f"transformers could not load the config class for {model_type!r}", error) from error


_REQUIRES_LIBRARY = re.compile(r"requires the (\S+) library")
OPTIONAL_PACKAGES = {"timm": "mmfreeze[timm]", "torchvision": "mmfreeze[timm]"}
"""Packages some model classes import when built, and the extra that installs them."""


def environment_error(what: str, error: BaseException) -> EnvironmentBuildError:
    """``what`` failed for a reason of this machine; says which package, and how to install it."""
    if isinstance(error, MemoryError):
        return EnvironmentBuildError(f"{what}: out of memory")
    package = (getattr(error, "name", None) or _required_library(error)).split(".")[0]
    detail = first_line(error) or "no message"
    hint = f"; install it: pip install '{OPTIONAL_PACKAGES[package]}'" if package in OPTIONAL_PACKAGES else ""
    return EnvironmentBuildError(
        f"{what}: a package it needs does not import here ({package or type(error).__name__}: {detail}){hint}")


def _required_library(error: BaseException) -> str:
    """The package transformers' ``requires_backends`` names ("X requires the timm library but it
    was not found"): its ImportError carries no ``name``."""
    found = _REQUIRES_LIBRARY.search(str(error))
    return found.group(1) if found else ""


def constructed(config: PretrainedConfig, model_class: type[nn.Module]) -> nn.Module:
    """``model_class._from_config(config)`` wherever the caller builds (meta device, fake tensors,
    the CPU), weights uninitialised: transformers' ``no_init_weights`` skips torch's per-module
    initialisation and the model's ``init_weights``, and the ties ``init_weights`` would have made
    are made after. No caller reads a weight's value, and on the meta device every Linear's init ran
    through Python decompositions (2.7 s of CPU in a cold corpus build, measured)."""
    from transformers.initialization import no_init_weights

    with no_init_weights():
        model = model_class._from_config(config)
    model.tie_weights()
    return model


def build_fake_model(config: PretrainedConfig, model_class: type[nn.Module], mode: Any) -> nn.Module:
    """Instantiate ``model_class`` from ``config`` under ``mode``, a ``FakeTensorMode``: every tensor
    has its real shape and no storage, like on meta, and a data-dependent operation (``.item()``, a
    mask's ``nonzero``) gives a symbolic value instead of failing as it does on meta."""
    try:
        with warnings.catch_warnings(), quiet_transformers(), mode:
            warnings.simplefilter("ignore")
            return constructed(config, model_class)
    except Exception as error:  # transformers raises many kinds for a bad config
        raise ModelBuildError(f"transformers could not build {model_class.__name__} with fake tensors from this "
                              f"config: {type(error).__name__}: {first_line(error)}") from error


def build_meta_model(
    config: PretrainedConfig, model_class: type[nn.Module], *, constructor: Literal["transformers", "framework"] = "transformers"
) -> nn.Module:
    """Instantiate ``model_class`` from ``config`` on the meta device (no storage, real names).

    ``constructor``: ``transformers`` calls ``model_class._from_config(config)``; ``framework``
    calls ``model_class(config)``, as NeMo AutoModel constructs its own classes.
    """
    import torch

    who = "nemo-automodel" if constructor == "framework" else "transformers"
    try:
        with warnings.catch_warnings(), quiet_transformers():
            warnings.simplefilter("ignore")
            with torch.device("meta"):
                if constructor == "framework":
                    return model_class(config)
                return constructed(config, model_class)
    except (ImportError, MemoryError) as error:
        raise environment_error(f"{who} could not build {model_class.__name__} on the meta device", error) from error
    except Exception as error:  # transformers raises many kinds for a bad config
        detail = first_line(error)  # some list every config class on later lines
        raise ModelBuildError(
            f"{who} could not build {model_class.__name__} on the meta device from this config: "
            f"{type(error).__name__}: {detail}"
        ) from error
