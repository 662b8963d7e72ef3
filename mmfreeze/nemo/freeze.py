"""New-vocabulary `freeze_config` sections through the framework's own parse and apply points.

0.7 parses `freeze_config` with ``parse_freeze_config`` (at the recipe boundary and again in
``apply_model_infrastructure``) and applies it from ``_apply_trainability_policy``, which calls
``apply_parameter_freezing`` between the PEFT baseline and the invariant freezes: strict on the
whole model, then non-strict after every model surgery and on each pipeline stage.

A `(modality, role)` section parses into :class:`FrameworkSection` objects, a subclass of the
framework's own ``FreezeConfig`` (so every framework type check and the second parse accept it),
and the freeze step runs mmfreeze's engine on it. Every other section goes to the framework's own
functions unchanged. The strict pass validates the section on the whole model and records, by
canonical name, what it froze; a non-strict pass (a stage, or the model after surgery) freezes
exactly those names among the parameters it holds, as the framework's selectors do with
``strict=False``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from mmfreeze.freeze.apply import apply_freeze_config
from mmfreeze.freeze.config import FreezeConfig as NewFreezeConfig
from mmfreeze.freeze.config import parse_freeze_config
from mmfreeze.freeze.keys import detect_vocabulary
from mmfreeze.nemo.context import RunContext
from mmfreeze.resolver.paths import strip_wrapper_segments


@cache
def section_class() -> type:
    """The framework's ``FreezeConfig`` extended with a parsed mmfreeze section (made once)."""
    from nemo_automodel.components.utils.model_utils import FreezeConfig

    @dataclass(frozen=True)
    class FrameworkSection(FreezeConfig):
        """A `(modality, role)` section the framework carries as its own ``FreezeConfig``.

        The framework's fields keep values that freeze nothing: only the integration's freeze
        step reads ``section``."""

        section: NewFreezeConfig | None = field(default=None, compare=False)
        strict_pass: list[frozenset[str]] = field(default_factory=list, compare=False, repr=False)
        """The canonical names the last strict pass froze (one entry once it ran); a non-strict
        pass freezes these among the parameters it holds."""

    return FrameworkSection


def parse_hook(original: Callable[[Any], Any], context: RunContext) -> Callable[[Any], Any]:
    """``parse_freeze_config`` that parses a `(modality, role)` section with mmfreeze's parser."""

    def parse_freeze_config_with_mmfreeze(config: Any) -> Any:
        if isinstance(config, Mapping) and detect_vocabulary(config, source=context.source) == "new":
            parsed = parse_freeze_config(dict(config), source=context.source)
            return section_class()(freeze_vision_tower=False, section=parsed)
        return original(config)

    return parse_freeze_config_with_mmfreeze


def apply_hook(original: Callable[..., Any], context: RunContext) -> Callable[..., Any]:
    """``apply_parameter_freezing`` that runs mmfreeze's engine on a parsed mmfreeze section."""
    parse = parse_hook(lambda config: config, context)

    def apply_parameter_freezing_with_mmfreeze(model: Any, freeze_config: Any, *, strict: bool = True) -> None:
        parsed = parse(freeze_config)
        if not isinstance(parsed, section_class()):
            return original(model, freeze_config, strict=strict)
        if strict or not parsed.strict_pass:
            result = apply_freeze_config(model, parsed.section, override_specs=context.override_specs)
            parsed.strict_pass[:] = [frozenset(strip_wrapper_segments(name) for name in result.plan.frozen)]
            return None
        for name, parameter in model.named_parameters(remove_duplicate=False):
            if strip_wrapper_segments(name) in parsed.strict_pass[0]:
                parameter.requires_grad_(False)
        return None

    return apply_parameter_freezing_with_mmfreeze
