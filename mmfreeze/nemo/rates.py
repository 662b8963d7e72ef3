"""`param_group_overrides` entries in the `(modality, role)` vocabulary, run by the framework's own grouping.

0.7.0 turns each entry into its ``ParamGroupOverride(pattern, lr_mult, wd_mult)`` in
``_coerce_param_group_overrides`` (when a typed optimizer config is made, or in
``OptimizerFromFactoryConfig.build``), then ``OptimizerConfig.build`` gives every model part's
trainable parameters to ``_build_param_groups``, first matching pattern first.

The integration keeps all of that. Its coerce step turns an entry with a selector into a
:func:`selector_override` (a ``ParamGroupOverride`` that remembers mmfreeze's parsed entry). Its
build step (:func:`with_resolved_rates`, before the framework's ``build``) resolves those
selectors on the model the optimizer is built for, checks every entry as `mmfreeze snapshot`
does, and hands the framework's ``build`` a copy of the config whose selector entries are plain
patterns matching exactly the tensors selected. So the groups, their order and the first-match
rule stay the framework's own code.

A pipeline-parallel run builds one optimizer per stage, and a stage holds part of the model: a
layer range or a role cannot be resolved on it, so selector entries refuse to build there.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from mmfreeze.boundary.hook_points import COERCE_OVERRIDES, DION_CONFIG_BASE
from mmfreeze.boundary.names import OPTIMIZER, framework_attribute
from mmfreeze.exceptions import IntegrationError
from mmfreeze.freeze.optimizer import PATTERN_KEY, GroupOverride, OptimizerSection, parse_override
from mmfreeze.freeze.param_groups import check_overrides, exact_names_pattern, select_rates
from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.models.structure import structure_of
from mmfreeze.nemo.context import RunContext
from mmfreeze.recipes.optimizer import OVERRIDES
from mmfreeze.resolver.bind import resolve_model_inventory

UNRESOLVED = "(mmfreeze selector entry {} was not resolved: build the optimizer with mmfreeze.nemo installed"
"""The pattern a selector entry carries until it is resolved: an unbalanced group, so any code that
compiles it unresolved fails loudly, naming the entry, instead of matching nothing."""


@cache
def selector_override_class() -> type:
    """The framework's ``ParamGroupOverride`` with mmfreeze's parsed entry (made once)."""
    from nemo_automodel.components.optim.optimizer import ParamGroupOverride

    @dataclasses.dataclass
    class SelectorOverride(ParamGroupOverride):
        entry: GroupOverride | None = None

    return SelectorOverride


def selector_override(entry: GroupOverride) -> Any:
    return selector_override_class()(pattern=UNRESOLVED.format(entry.describe()), lr_mult=entry.lr_mult,
                                      wd_mult=entry.wd_mult, entry=entry)


def coerce_hook(original: Callable[[list[Any]], list[Any]], context: RunContext) -> Callable[[list[Any]], list[Any]]:
    """``_coerce_param_group_overrides`` that keeps selector entries (parsed by mmfreeze) in their place."""

    def coerce_with_selectors(overrides: list[Any]) -> list[Any]:
        coerced: list[Any] = []
        for index, item in enumerate(overrides):
            if isinstance(item, Mapping) and PATTERN_KEY not in item:
                coerced.append(selector_override(parse_override(index, item, context.source)))
            else:
                coerced += original([item])
        return coerced

    return coerce_with_selectors


def with_resolved_rates(config: Any, model: Any, context: RunContext) -> Any:
    """``config``, or a copy whose selector entries are patterns of exactly the tensors they select
    on ``model`` (after every entry is checked as `mmfreeze snapshot` checks it)."""
    factory_kwargs = getattr(config, "kwargs", None)
    coerce = framework_attribute(OPTIMIZER, COERCE_OVERRIDES.attribute)
    overrides = list(config.param_group_overrides) or coerce((factory_kwargs or {}).get(OVERRIDES, []))
    entries = [getattr(override, "entry", None) for override in overrides]
    if not any(entries):
        return config
    where = f"optimizer.{OVERRIDES}"
    if isinstance(config, framework_attribute(OPTIMIZER, DION_CONFIG_BASE)):
        raise IntegrationError(f"{type(config).__name__} does its own parameter grouping and ignores "
                               f"{OVERRIDES}; use a torch optimizer", source=context.source, key=where)
    parts = list(getattr(model, "parts", [model]))
    if len(parts) != 1:
        raise IntegrationError(
            f"selector entries are resolved on the whole model, and this run builds one optimizer per pipeline "
            f"stage ({len(parts)}); write their tensors as regex patterns (`mmfreeze explain` shows the names)",
            source=context.source, key=where)
    resolved = _resolved(overrides, entries, parts[0], context)
    changes: dict[str, Any] = {"param_group_overrides": resolved}
    if factory_kwargs is not None:
        changes["kwargs"] = {key: value for key, value in factory_kwargs.items() if key != OVERRIDES}
    return dataclasses.replace(config, **changes)


def build_hook(original: Callable[..., list[Any]], context: RunContext) -> Callable[..., list[Any]]:
    """``OptimizerConfig.build`` (every optimizer config class of 0.7.0 with a ``build`` of its own:
    :data:`mmfreeze.boundary.hook_points.BUILD_OPTIMIZER`) with the recipe's selector entries resolved
    on the model; the framework's ``build`` makes the optimizers."""

    @functools.wraps(original)  # keeps the framework's own reachable (``__wrapped__``) for hook checks
    def build_with_mmfreeze(self: Any, model: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return original(with_resolved_rates(self, model, context), model, *args, **kwargs)

    return build_with_mmfreeze


def _resolved(overrides: list[Any], entries: list[GroupOverride | None], model: Any, context: RunContext) -> list[Any]:
    from nemo_automodel.components.optim.optimizer import ParamGroupOverride
    from nemo_automodel.shared.parameter_names import canonical_parameter_fqn

    section = OptimizerSection(target="", overrides=tuple(
        entry or GroupOverride(index=index, pattern=override.pattern, lr_mult=override.lr_mult,
                               wd_mult=override.wd_mult)
        for index, (override, entry) in enumerate(zip(overrides, entries, strict=True))))
    structure = structure_of(model)
    targets = FreezeTargets(structure=structure,
                            inventory=resolve_model_inventory(model, override_specs=context.override_specs))
    selected = select_rates(section, targets, source=context.source)
    names = [info.name for info in structure.parameters]
    check_overrides(section, names, [info.name for info in structure.parameters if info.requires_grad],
                    source=context.source, selected=selected)
    return [
        override if entry is None else ParamGroupOverride(
            pattern=exact_names_pattern(canonical_parameter_fqn(name) for name in selected[entry.index]),
            lr_mult=override.lr_mult, wd_mult=override.wd_mult)
        for override, entry in zip(overrides, entries, strict=True)
    ]
