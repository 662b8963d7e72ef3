"""The new `freeze_config` vocabulary: parsed once, validated in one place, errors that teach.

```yaml
freeze_config:
  vision: {tower: true, projector: false}     # (modality, role) groups from the resolver
  audio:  {tower: true, projector: true}
  language_model: false                       # decoder, embeddings, final norm, lm_head
  modules:                                    # more to freeze: selectors
    - model.language_model.embed_tokens       #   an exact canonical module path (or parameter name)
    - {glob: "model.language_model.layers.*.mlp"}   # fnmatch over module paths, `*` crosses dots
    - {layers: language_model, first: 20}     #   a layer range: first/last N, or from: A, to: B
  except:                                     # kept trainable inside what the lines above freeze
    - {layers: vision.tower, last: 4}
    - model.visual.merger
```

Every key other than ``language_model``, ``modules`` and ``except`` is a modality from the resolver,
mapping roles to booleans. Nothing is frozen implicitly: what is not written is not frozen.
``except`` only carves out of what this section freezes. What the model built frozen, what the
PEFT baseline froze before the section runs and what the framework's invariants freeze after it
stay frozen (see ``docs/migration.md``, "Why exceptions never unfreeze").

:func:`parse_freeze_config` checks the shape of the section alone; :func:`check_against_model`
checks it against one model (modalities, roles, paths, globs, layer stacks and their depth, and
that every exception keeps something trainable) and says what each entry selects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.keys import SECTION, is_framework_key
from mmfreeze.freeze.targets import LANGUAGE_MODEL_KEY, FreezeTargets, LayerStack
from mmfreeze.freeze.selectors import MODULE_SELECTOR_KINDS, ModuleSelector, parse_module_selector, unmatched
from mmfreeze.suggest import did_you_mean

MODULES_KEY = "modules"
EXCEPT_KEY = "except"
LAYERS_KEY = "layers"
SELECTOR_KINDS = (*MODULE_SELECTOR_KINDS, LAYERS_KEY)
COUNT_KEYS = ("first", "last")
RANGE_KEYS = (*COUNT_KEYS, "from", "to")
RANGE_SHAPES = (("first",), ("last",), ("from", "to"))
RESERVED_KEYS = (LANGUAGE_MODEL_KEY, MODULES_KEY, EXCEPT_KEY)
EMBEDDINGS_HINT = (
    "`freeze_embeddings` was never read by the old freezing code (recipes trained with it ignored), "
    "so it has no meaning to carry over; `mmfreeze migrate` removes it. To freeze the token "
    "embeddings explicitly, list their module path under `modules:` "
    "(e.g. `modules: [model.language_model.embed_tokens]`; `mmfreeze explain` shows the paths)"
)
SELECTOR_SHAPES = ("a module path, `{path: X}`, `{glob: X}`, or a layer range "
                   "`{layers: GROUP, first: N}` / `{layers: GROUP, last: N}` / `{layers: GROUP, from: A, to: B}`")


@dataclass(frozen=True, kw_only=True)
class LayerRange:
    """``{layers: GROUP, first: N}``, ``{layers: GROUP, last: N}`` or ``{layers: GROUP, from: A, to: B}``."""

    where: str
    """The entry in the section (``except[0]``), for messages."""
    group: str
    """A layer stack: ``language_model``, ``<modality>.<role>`` or the stack's canonical path."""
    first: int | None = None
    last: int | None = None
    start: int | None = None
    """``from``: the first layer number of an explicit range."""
    stop: int | None = None
    """``to``: the last layer number of an explicit range (inclusive)."""

    def pick(self, indices: tuple[int, ...]) -> tuple[int, ...]:
        """The layer numbers this range selects among a stack's ``indices``."""
        if self.first is not None:
            return indices[: self.first]
        if self.last is not None:
            return indices[-self.last:]
        return tuple(index for index in indices if self.start <= index <= self.stop)  # type: ignore[operator]

    def out_of_range(self, stack: LayerStack) -> str | None:
        """Why the range does not fit ``stack``'s real depth, or ``None``."""
        for key, count in zip(COUNT_KEYS, (self.first, self.last), strict=True):
            if count is not None and count > stack.depth:
                return f"{key}: {count} exceeds the depth of {stack.describe()}"
        if self.stop is not None and self.stop > stack.indices[-1]:
            return f"to: {self.stop} is past the last layer of {stack.describe()} (layers 0-{stack.indices[-1]})"
        return None

    def describe(self) -> str:
        shown = (f"first: {self.first}" if self.first is not None else
                 f"last: {self.last}" if self.last is not None else f"from: {self.start}, to: {self.stop}")
        return f"layers: {self.group}, {shown}"


Selector = ModuleSelector | LayerRange


@dataclass(frozen=True, kw_only=True)
class FreezeConfig:
    """A validated new-vocabulary `freeze_config`."""

    roles: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    """Modality -> role -> freeze it."""
    language_model: bool = False
    """Freeze the whole language model: decoder, token embeddings, final norm and lm_head."""
    modules: tuple[Selector, ...] = ()
    """More to freeze: exact canonical paths (a module's subtree, or one parameter), globs, layer ranges."""
    exceptions: tuple[Selector, ...] = ()
    """``except``: kept trainable inside what the entries above freeze (never more)."""

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> FreezeConfig:
        return parse_freeze_config(data, source=source)


@dataclass(frozen=True, kw_only=True)
class Selected:
    """What one entry of a checked section selects on one model."""

    where: str
    """The entry: ``vision.tower``, ``language_model``, ``modules[0]``, ``except[1]``."""
    rule: str
    """How a plan names it: ``vision.tower``, ``language_model``, ``modules: model.x``."""
    names: frozenset[str]
    """Raw parameter names."""


@dataclass(frozen=True, kw_only=True)
class Selection:
    """A section checked against one model: what it freezes, and what its exceptions keep trainable."""

    freezes: tuple[Selected, ...]
    exceptions: tuple[Selected, ...] = ()

    @property
    def kept_trainable(self) -> frozenset[str]:
        return frozenset(name for selected in self.exceptions for name in selected.names)


def parse_freeze_config(data: Any, *, source: str | None = None) -> FreezeConfig:
    """A :class:`FreezeConfig` from a new-vocabulary section, or one error listing every problem."""
    if not isinstance(data, Mapping):
        raise FreezeConfigError(f"must be a mapping, got {type(data).__name__}", source=source, key=SECTION)
    problems: list[str] = []
    roles: dict[str, dict[str, bool]] = {}
    selectors: dict[str, tuple[Selector, ...]] = {}
    for key, value in data.items():
        if key == LANGUAGE_MODEL_KEY:
            _check_bool(value, f"{SECTION}.{key}", problems)
        elif key in (MODULES_KEY, EXCEPT_KEY):
            selectors[key] = _parse_selectors(key, value, problems)
        else:
            roles[str(key)] = _parse_roles(key, value, problems)
    _raise_problems(problems, source)
    return FreezeConfig(
        roles=roles,
        language_model=bool(data.get(LANGUAGE_MODEL_KEY, False)),
        modules=selectors.get(MODULES_KEY, ()),
        exceptions=selectors.get(EXCEPT_KEY, ()),
    )


def _parse_roles(key: Any, value: Any, problems: list[str]) -> dict[str, bool]:
    where = f"{SECTION}.{key}"
    if key == "freeze_embeddings" or is_framework_key(key):
        problems.append(f"{where}: {EMBEDDINGS_HINT if key == 'freeze_embeddings' else 'is a legacy key'}")
        return {}
    if not isinstance(key, str) or not key:
        problems.append(f"{where}: a modality name must be a non-empty string")
        return {}
    if not isinstance(value, Mapping):
        problems.append(
            f"{where}: a modality maps roles to true/false, e.g. `{key}: {{tower: true, projector: false}}`; "
            f"got {value!r}{did_you_mean(key, RESERVED_KEYS)}"
        )
        return {}
    for role, flag in value.items():
        _check_bool(flag, f"{where}.{role}", problems)
    return {str(role): bool(flag) for role, flag in value.items()}


def _check_bool(value: Any, where: str, problems: list[str]) -> None:
    if not isinstance(value, bool):
        problems.append(f"{where}: must be true or false, got {value!r} ({type(value).__name__})")


def _parse_selectors(key: str, value: Any, problems: list[str]) -> tuple[Selector, ...]:
    if not isinstance(value, list):
        problems.append(f"{SECTION}.{key}: must be a list of selectors, each {SELECTOR_SHAPES}; got {value!r}")
        return ()
    parsed = (_parse_selector(item, f"{key}[{index}]", problems) for index, item in enumerate(value))
    return tuple(selector for selector in parsed if selector is not None)


def _parse_selector(item: Any, where: str, problems: list[str]) -> Selector | None:
    if isinstance(item, str) and item.strip():
        return ModuleSelector(where=where, path=item)
    if isinstance(item, Mapping) and LAYERS_KEY in item:
        return parse_layer_range(item, where, problems)
    try:
        return parse_module_selector(item, where, kinds=SELECTOR_KINDS, shapes=SELECTOR_SHAPES)
    except FreezeConfigError as error:
        problems.append(f"{error.key}: {error.message}")
        return None


def parse_layer_range(item: Mapping[str, Any], where: str, problems: list[str], *,
                      section: str = SECTION) -> LayerRange | None:
    """``{layers: GROUP, ...}`` as a :class:`LayerRange`, or ``None`` with each problem appended
    (``<section>.<where>.<key>: message``)."""
    found = len(problems)
    at = f"{section}.{where}"
    problems += [f"{at}.{key}: not a layer-range key{did_you_mean(str(key), RANGE_KEYS)}"
                 for key in item if key != LAYERS_KEY and key not in RANGE_KEYS]
    group = item[LAYERS_KEY]
    if not isinstance(group, str) or not group.strip():
        problems.append(f"{at}.layers: must name a layer stack (language_model, vision.tower, ...), got {group!r}")
    shape = tuple(key for key in RANGE_KEYS if key in item)
    if shape not in RANGE_SHAPES:
        problems.append(f"{at}: a layer range has exactly one of `first: N`, `last: N` or `from: A` with `to: B`; "
                        f"got {', '.join(shape) or 'none of them'}")
    for key in shape:
        least = 1 if key in COUNT_KEYS else 0
        if isinstance(item[key], bool) or not isinstance(item[key], int) or item[key] < least:
            problems.append(f"{at}.{key}: must be a whole number (at least {least}), got {item[key]!r}")
    if len(problems) == found and shape == ("from", "to") and item["from"] > item["to"]:
        problems.append(f"{at}: from: {item['from']} is after to: {item['to']}")
    if len(problems) > found:
        return None
    return LayerRange(where=where, group=group, first=item.get("first"), last=item.get("last"),
                      start=item.get("from"), stop=item.get("to"))


def check_against_model(config: FreezeConfig, targets: FreezeTargets, *, source: str | None = None) -> Selection:
    """What every entry of ``config`` selects on the model, or one error listing every problem:
    modalities, roles, paths, globs and layer stacks the model lacks, ranges past the real depth,
    and exceptions that keep nothing trainable."""
    problems = [*_unknown_roles(config, targets.roles)]
    freezes = [*_flag_selections(config, targets)]
    freezes += _selections(config.modules, MODULES_KEY, targets, problems)
    exceptions = _selections(config.exceptions, EXCEPT_KEY, targets, problems)
    if not problems:
        problems += _ineffective(exceptions, freezes, targets)
    _raise_problems(problems, source)
    return Selection(freezes=tuple(freezes), exceptions=tuple(exceptions))


def _unknown_roles(config: FreezeConfig, roles_by_modality: Mapping[str, list[str]]) -> Iterable[str]:
    have = ", ".join(f"{m} ({', '.join(sorted(r))})" for m, r in sorted(roles_by_modality.items())) or "none"
    for modality, roles in config.roles.items():
        if modality not in roles_by_modality:
            yield (f"{SECTION}.{modality}: this model has no modality {modality!r}"
                   f"{did_you_mean(modality, [*roles_by_modality, *RESERVED_KEYS])}; "
                   f"modalities (roles): {have}")
            continue
        for role in roles:
            if role not in roles_by_modality[modality]:
                yield (f"{SECTION}.{modality}.{role}: the {modality} modality has no role {role!r}"
                       f"{did_you_mean(role, roles_by_modality[modality])}; "
                       f"it has: {', '.join(sorted(roles_by_modality[modality]))}")


def _flag_selections(config: FreezeConfig, targets: FreezeTargets) -> Iterable[Selected]:
    for modality, roles in config.roles.items():
        for role, flag in roles.items():
            if flag and role in targets.roles.get(modality, ()):
                label = f"{modality}.{role}"
                yield Selected(where=label, rule=label, names=targets.role_names(modality, role))
    if config.language_model:
        yield Selected(where=LANGUAGE_MODEL_KEY, rule=LANGUAGE_MODEL_KEY, names=targets.language_model)


def _selections(selectors: Iterable[Selector], key: str, targets: FreezeTargets, problems: list[str]) -> list[Selected]:
    found = []
    for selector in selectors:
        names, problem = select_names(selector, targets)
        if problem is not None:
            problems.append(f"{SECTION}.{selector.where}: {problem}")
        else:
            found.append(Selected(where=selector.where, rule=f"{key}: {_describe(selector)}", names=names))
    return found


def _describe(selector: Selector) -> str:
    if isinstance(selector, ModuleSelector) and selector.path is not None:
        return selector.path
    return selector.describe()


def select_names(selector: Selector, targets: FreezeTargets) -> tuple[frozenset[str], str | None]:
    """The raw parameter names ``selector`` selects, or why it selects none on this model."""
    if isinstance(selector, LayerRange):
        return _select_layers(selector, targets)
    if selector.path is not None:  # a module's subtree, or one parameter
        names = targets.subtree.get(selector.path, frozenset())
    else:
        names = targets.names_under(selector.select(targets.module_paths))
    if names:
        return names, None
    matched = selector.select(targets.module_paths)
    return names, unmatched(selector, matched_modules=len(matched), module_paths=targets.module_paths)


def _select_layers(selector: LayerRange, targets: FreezeTargets) -> tuple[frozenset[str], str | None]:
    stacks = targets.stacks_named(selector.group)
    if not stacks:
        names = [name for stack in targets.layer_stacks for name in (stack.group, stack.path)]
        listed = "; ".join(stack.describe() for stack in targets.layer_stacks) or "none"
        return frozenset(), (f"layers: this model has no layer stack {selector.group!r}"
                             f"{did_you_mean(selector.group, names)}; layer stacks: {listed}")
    if len(stacks) > 1:
        return frozenset(), (f"layers: {selector.group!r} holds {len(stacks)} layer stacks "
                             f"({', '.join(s.path for s in stacks)}); name one by its path")
    stack = stacks[0]
    problem = selector.out_of_range(stack)
    if problem is not None:
        return frozenset(), problem
    return targets.names_under(f"{stack.path}.{index}" for index in selector.pick(stack.indices)), None


def _ineffective(exceptions: list[Selected], freezes: list[Selected], targets: FreezeTargets) -> Iterable[str]:
    frozen = frozenset(name for selected in freezes for name in selected.names)
    for selected in exceptions:
        inside = selected.names & frozen
        if not inside:
            yield (f"{SECTION}.{selected.where}: keeps nothing trainable: nothing it selects is frozen by this "
                   "section (an exception only carves out of what the section's flags and `modules` freeze)")
        elif inside <= targets.fixed.keys():
            reasons = sorted({targets.fixed[name] for name in inside})
            yield (f"{SECTION}.{selected.where}: keeps nothing trainable: all {len(inside)} parameters it selects "
                   f"inside what this section freezes stay frozen anyway: {'; '.join(reasons)}")


def _raise_problems(problems: list[str], source: str | None) -> None:
    """One error for every problem; a single one is keyed by the entry it names (``freeze_config.except[0]``)."""
    if len(problems) == 1 and problems[0].startswith(SECTION + "."):
        key, _, message = problems[0].partition(": ")
        raise FreezeConfigError(message, source=source, key=key)
    if problems:
        raise FreezeConfigError(
            problems[0] if len(problems) == 1 else
            f"{len(problems)} problems:\n" + "\n".join(f"  - {problem}" for problem in problems),
            source=source, key=SECTION,
        )
