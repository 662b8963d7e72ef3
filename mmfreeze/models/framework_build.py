"""Build what NeMo AutoModel builds, the framework's way (imports nemo-automodel; see :mod:`.framework`).

Mirrors ``nemo_automodel._transformers.model_init``: the config comes from the framework's own
config class for the model type when it registers one (``resolve_custom_config_cls``), else from
transformers; the class from ``_resolve_custom_model_cls_for_config`` (Mistral3 variants,
``supports_config``, the compatibility screen), unless the recipe says ``force_hf: true``
(``get_is_hf_model``). ``None`` there means the framework builds the transformers class, and so
does mmfreeze. A recipe's ``_target_`` is never imported. The meta-device instantiation itself is
:func:`mmfreeze.models.build.build_meta_model`'s, as for every model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mmfreeze.boundary.names import MODEL_INIT, REGISTRY
from mmfreeze.exceptions import ModelBuildError
from mmfreeze.models.framework import BuildSpec, framework_class_for
from mmfreeze.models.quiet import quiet_imports

if TYPE_CHECKING:
    from torch import nn

    from transformers import PretrainedConfig

    from mmfreeze.models.loader import LiveModel


def effective_spec(config: Mapping[str, Any], auto_class: str, spec: BuildSpec) -> BuildSpec:
    """What builds the model: ``spec``, or, for a transformers build of a framework target whose
    checkpoint transformers has no class for, the framework's own class (``BuildSpec.stand_in``),
    picked as the framework picks it, by ``architectures`` (imports transformers, not the framework)."""
    if spec.kind != "transformers" or not spec.stand_in or framework_class_for(config) is None:
        return spec
    from mmfreeze.models.build import transformers_builds

    if transformers_builds(config.get("model_type"), auto_class):
        return spec
    return BuildSpec(kind="framework", framework_version=spec.stand_in)


def build_framework_model(config: Mapping[str, Any], auto_class: str, spec: BuildSpec, *, source: str) -> LiveModel:
    """The model the framework builds from this config.json content, on the meta device.
    Errors are :class:`ModelBuildError` instances naming ``source`` and the ``model`` key."""
    try:
        with quiet_imports():  # a framework class may load a kernel package as it is built (the CUDA probe)
            return _build(config, auto_class, spec)
    except ModelBuildError as error:
        raise type(error)(error.message, source=source, key="model") from error


def _build(config: Mapping[str, Any], auto_class: str, spec: BuildSpec) -> LiveModel:
    from mmfreeze.models.build import build_meta_model, resolve_model_class
    from mmfreeze.models.loader import LiveModel

    framework_config = build_framework_config(config)
    model_class = None if spec.force_hf else resolve_framework_class(framework_config)
    if model_class is None:  # the framework builds the transformers class
        return LiveModel(build_meta_model(framework_config, resolve_model_class(framework_config, auto_class)))
    try:
        return LiveModel(build_meta_model(framework_config, model_class, constructor="framework"))
    except ModelBuildError as error:
        if spec.fallback != "transformers":
            raise ModelBuildError(
                f"{error.message}; `builder_fallback = \"transformers\"` under [tool.mmfreeze] (or "
                "--builder-fallback transformers) builds the transformers class instead, and the snapshot says so",
                source=error.source, key=error.key) from error
        reason = f"{model_class.__name__}: {error.message}"
    from mmfreeze.models.build import build_transformers_config

    transformers_config = build_transformers_config(config)
    model = build_meta_model(transformers_config, resolve_model_class(transformers_config, auto_class))
    return LiveModel(model, build_note=reason)


def build_framework_config(config: Mapping[str, Any]) -> PretrainedConfig:
    """The config object the framework makes: its own config class for the model type, else transformers'."""
    from mmfreeze.models.build import (
        build_transformers_config,
        config_from_dict,
        custom_code_advice,
        transformers_config_class,
    )

    registry = framework_module(REGISTRY)
    model_type = config.get("model_type")
    config_class = registry.resolve_custom_config_cls(str(model_type))
    framework = framework_class_for(config)
    if config_class is None and framework is not None and transformers_config_class(model_type) is None:
        # The framework's loader makes this config with the checkpoint's code (trust_remote_code).
        raise ModelBuildError(
            f"nemo-automodel builds {framework.describe()} for {framework.architecture} from a config object that "
            f"neither it nor transformers defines (model_type {model_type!r})" + custom_code_advice(config))
    if config_class is None:
        return build_transformers_config(config)
    return config_from_dict(config_class, config, maker=f"the framework's {config_class.__name__}")


def resolve_framework_class(config: PretrainedConfig) -> type[nn.Module] | None:
    """The framework's own class for ``config``, or ``None`` when it builds the transformers class."""
    model_init = framework_module(MODEL_INIT)
    try:
        return model_init._resolve_custom_model_cls_for_config(config)
    except Exception as error:  # a model module that does not import here, a failing supports_config
        raise ModelBuildError(
            f"nemo-automodel could not choose a class for {config.model_type!r}: {type(error).__name__}: {error}"
        ) from error


def framework_module(name: str) -> Any:
    import importlib

    try:
        with quiet_imports():
            return importlib.import_module(name)
    except Exception as error:  # missing dependency, incompatible transformers
        from mmfreeze.models.build import environment_error

        raise environment_error(f"nemo-automodel is installed but {name} does not import", error) from error
