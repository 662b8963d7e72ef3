"""nemo-automodel's own `freeze_config`: legacy booleans plus `freeze_modules` / `unfreeze_modules`.

0.7 (``components/utils/model_utils.py``: ``parse_freeze_config``, ``apply_parameter_freezing``)
accepts six keys. The legacy booleans keep their attribute-and-substring rules
(:mod:`mmfreeze.freeze.legacy`); ``freeze_vision_tower`` defaults to true only when neither
selector list is present. Then ``freeze_modules`` freezes and ``unfreeze_modules`` unfreezes, and
unfreeze wins on overlap, even over a PEFT-frozen base weight or a legacy flag. A selector is
``{path: X}`` (exact) or ``{glob: X}`` (``fnmatchcase``, ``*`` crosses dots), tested against every
module path (aliases included, root excluded) with checkpoint and compile wrapper components
removed; it takes the module's whole subtree; one that matches no parameter is an error.

0.6 read the section with ``dict.get``: other keys ignored, values by truthiness, no selectors.
A key 0.6 ignored is an input error here all the same (with a did-you-mean): a misspelt
``freeze_vison_tower`` trained as if it were absent, the silent change mmfreeze exists to catch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.keys import (
    BOOLEAN_KEYS,
    FRAMEWORK_KEYS,
    RELEASE_06_KEYS,
    SECTION,
    SELECTOR_KEYS,
    VIDEO_EMBEDDER_KEY,
    release_06_problems,
    strict_problems,
)
from mmfreeze.freeze.legacy import LEGACY_FLAGS, VIDEO_EMBEDDER_SUBSTRING, LegacyFlag, flag_matches, plan_legacy_freeze
from mmfreeze.freeze.plan import parameters_under_any
from mmfreeze.freeze.selectors import MODULE_SELECTOR_SHAPES, ModuleSelector, parse_module_selector, unmatched
from mmfreeze.models.structure import ModelStructure
from mmfreeze.boundary.releases import DECLARE_06, FrameworkRules

WRAPPER_COMPONENTS = ("_checkpoint_wrapped_module.", "_orig_mod.")
"""Removed from module paths before selectors are matched (``canonical_parameter_fqn``)."""
VIDEO_EMBEDDER_MODULES = LegacyFlag(
    key=VIDEO_EMBEDDER_KEY, default=False, root_attribute=None, substrings=(VIDEO_EMBEDDER_SUBSTRING,)
)
"""0.7 freezes the video embedder by module path (0.6 tested parameter names)."""


@dataclass(frozen=True, kw_only=True)
class FrameworkFreezeConfig:
    """A `freeze_config` as the framework release reads it: effective flags and selectors."""

    rules: FrameworkRules
    flags: Mapping[str, bool]
    """Legacy boolean key -> whether it is on (the vision default already resolved)."""
    freeze_modules: tuple[ModuleSelector, ...] = ()
    unfreeze_modules: tuple[ModuleSelector, ...] = ()


def parse_framework_freeze_config(
    section: Mapping[str, Any], rules: FrameworkRules, *, source: str | None = None
) -> FrameworkFreezeConfig:
    """The section as ``rules.release`` reads it; anything 0.7 rejects, or 0.6 ignores, is an error."""
    if rules.release == "0.6":
        ignored = release_06_problems(section)
        if ignored:
            raise FreezeConfigError(
                f"nemo-automodel 0.6 ignores {'; '.join(ignored)}: it reads freeze_config with dict.get and trains "
                f"as if the key were absent; valid keys under 0.6: {', '.join(RELEASE_06_KEYS)}",
                source=source, key=SECTION,
            )
        flags = {flag.key: bool(section.get(flag.key, flag.default)) for flag in LEGACY_FLAGS}
        return FrameworkFreezeConfig(rules=rules, flags={**flags, VIDEO_EMBEDDER_KEY: bool(section.get(VIDEO_EMBEDDER_KEY))})
    problems = strict_problems(section)
    if problems:
        raise FreezeConfigError(
            f"nemo-automodel 0.7 rejects {'; '.join(problems)}: run `mmfreeze migrate` to rewrite a 0.6-era "
            f"section; valid keys: {', '.join(FRAMEWORK_KEYS)} ({DECLARE_06})", source=source, key=SECTION,
        )
    selectors = {key: _selectors(section, key, source) for key in SELECTOR_KEYS if key in section}
    flags = {key: bool(section.get(key, False)) for key in BOOLEAN_KEYS}
    if section.get("freeze_vision_tower") is None:
        flags["freeze_vision_tower"] = not selectors
    return FrameworkFreezeConfig(rules=rules, flags=flags, **selectors)


def _selectors(section: Mapping[str, Any], key: str, source: str | None) -> tuple[ModuleSelector, ...]:
    entries = section[key]
    if not isinstance(entries, list):
        raise FreezeConfigError(
            f"must be a list of selectors, each {MODULE_SELECTOR_SHAPES}; got {entries!r}",
            source=source, key=f"{SECTION}.{key}",
        )
    return tuple(parse_module_selector(entry, f"{key}[{index}]", source=source) for index, entry in enumerate(entries))


def canonical_module_path(path: str) -> str:
    for component in WRAPPER_COMPONENTS:
        path = path.replace(component, "")
    return path


def framework_freeze_steps(
    structure: ModelStructure, config: FrameworkFreezeConfig, *, source: str | None = None
) -> Iterator[tuple[str, bool, str]]:
    """``(parameter name, trainable, rule)`` in the framework's order: flags, then freeze
    selectors, then unfreeze selectors. Later steps override earlier ones."""
    by_module = config.rules.release != "0.6" and config.flags[VIDEO_EMBEDDER_KEY]
    plan = plan_legacy_freeze(structure, {**config.flags, VIDEO_EMBEDDER_KEY: config.flags[VIDEO_EMBEDDER_KEY] and not by_module})
    yield from ((name, False, rules[0]) for name, rules in plan.rules_by_parameter.items())
    if by_module:
        yield from ((name, False, rule) for name, rule in flag_matches(structure, VIDEO_EMBEDDER_MODULES))
    for selectors, trainable in ((config.freeze_modules, False), (config.unfreeze_modules, True)):
        for selector in selectors:
            names = _selected_parameters(structure, selector, source=source)
            yield from ((name, trainable, f"{selector.where}: {selector.describe()}") for name in names)


def _selected_parameters(structure: ModelStructure, selector: ModuleSelector, *, source: str | None) -> list[str]:
    matched = selector.select((path for path in structure.modules if path), key=canonical_module_path)
    names = list(parameters_under_any(structure, matched))
    if not names:
        paths = [path for path in structure.modules if path and path not in structure.module_aliases]
        raise FreezeConfigError(
            f"{unmatched(selector, matched_modules=len(matched), module_paths=paths)} "
            "(nemo-automodel 0.7 rejects a selector that selects no parameter)",
            source=source, key=f"{SECTION}.{selector.where}",
        )
    return names
