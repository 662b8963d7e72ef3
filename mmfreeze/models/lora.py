"""LoRA as nemo-automodel injects it, on the structure alone; the one live adapter beside it.

The framework (``components/_peft/module_matcher.py``, ``lora.py``) patches every ``nn.Linear``
instance (subclasses included) that its ``ModuleMatcher`` selects, by the module's full path from
``named_modules()``:

- ``match_all_linear: true``: every Linear, ``lm_head`` included;
- ``target_modules``: the pattern equals the full path, or its wildcard regex matches the full
  path (no leaf-name match: ``q_proj`` alone selects only a top-level ``q_proj``);
- ``exclude_modules`` only: every Linear except the excluded ones;
- none of them: ``target_modules: ['*_proj']``.

``target_modules`` with ``exclude_modules``, or ``match_all_linear`` with either, is an error. A
patched Linear gains ``lora_A`` (dim x in) and ``lora_B`` (out x dim), plus ``lora_magnitude``
under DoRA. Then the PEFT baseline decides trainability by name (:func:`peft_baseline`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import regex

from mmfreeze.exceptions import RecipeError
from mmfreeze.models.structure import ModelStructure, ParameterInfo
from mmfreeze.recipes.composite import read_flag
from mmfreeze.boundary.names import GROUPED_EXPERTS
from mmfreeze.boundary.releases import CURRENT_RELEASE, Release

if TYPE_CHECKING:
    from torch import nn

DEFAULT_LORA_TARGETS = ("*_proj",)
ADAPTER_MARK = "lora_"
"""The PEFT baseline trains exactly the parameters whose name contains this."""


def adapted_weight(name: str) -> str:
    """The weight an adapter tensor adapts, ``x.q_proj.lora_A.weight`` -> ``x.q_proj.weight`` (it
    runs in the same forward, and labels like it); any other name is its own."""
    module, mark, _ = name.partition(f".{ADAPTER_MARK}")
    return f"{module}.weight" if mark else name

PEFT_CONFIG_FIELDS = frozenset({
    "_target_", "target_modules", "exclude_modules", "match_all_linear", "dim", "alpha", "use_dora",
    "dropout", "dropout_position", "lora_A_init", "lora_dtype", "use_memory_efficient_lora",
    "use_triton", "moe_rank_scaling", "expert_weight_format",
})
"""``PeftConfig``'s fields (0.7; 0.6 lacks ``expert_weight_format``): the recipe instantiates it
with the section as keyword arguments, so any other key is a TypeError in training."""


@dataclass(frozen=True, kw_only=True)
class LoraSpec:
    """A validated `peft:` section: what the matcher and the adapters need."""

    target_modules: tuple[str, ...] = ()
    exclude_modules: tuple[str, ...] = ()
    match_all_linear: bool = False
    dim: int = 8
    use_dora: bool = False


def parse_peft_section(peft: Any, *, source: str | None = None) -> LoraSpec:
    """A :class:`LoraSpec` from a recipe's `peft:` section, rejecting what the framework rejects."""
    if not isinstance(peft, Mapping):
        raise RecipeError(f"must be a mapping of PeftConfig fields, got {peft!r}", source=source, key="peft")
    unknown = sorted(str(key) for key in peft if key not in PEFT_CONFIG_FIELDS)
    if unknown:
        raise RecipeError(
            f"has unknown key(s) {', '.join(unknown)}; PeftConfig accepts {', '.join(sorted(PEFT_CONFIG_FIELDS))}",
            source=source, key="peft",
        )
    targets = _patterns(peft, "target_modules", source)
    excludes = _patterns(peft, "exclude_modules", source)
    match_all = read_flag(peft, "match_all_linear", where="peft", source=source)
    if targets and excludes:
        raise RecipeError(
            "target_modules and exclude_modules are mutually exclusive in nemo-automodel; keep "
            "target_modules (only these) or exclude_modules (every Linear but these)",
            source=source, key="peft",
        )
    if match_all and (targets or excludes):
        raise RecipeError(
            "match_all_linear: true takes every Linear, so target_modules / exclude_modules must be empty",
            source=source, key="peft.match_all_linear",
        )
    if not (match_all or targets or excludes):
        targets = DEFAULT_LORA_TARGETS
    return LoraSpec(
        target_modules=targets, exclude_modules=excludes, match_all_linear=match_all,
        dim=_dim(peft, source), use_dora=read_flag(peft, "use_dora", where="peft", source=source),
    )


def _patterns(peft: Mapping[str, Any], key: str, source: str | None) -> tuple[str, ...]:
    value = peft.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RecipeError(f"must be a list of module path patterns, got {value!r}", source=source, key=f"peft.{key}")
    for pattern in value:
        try:
            wildcard_regex(pattern, CURRENT_RELEASE)
        except (re.error, regex.error) as error:
            raise RecipeError(
                f"pattern {pattern!r} is not a valid wildcard (the framework compiles it as a regex: {error})",
                source=source, key=f"peft.{key}",
            ) from error
    return tuple(value)


def _dim(peft: Mapping[str, Any], source: str | None) -> int:
    dim = peft.get("dim", 8)
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise RecipeError(f"must be a positive integer, got {dim!r}", source=source, key="peft.dim")
    return dim


WILDCARD_SECONDS = 2.0
"""How long one match of a recipe's LoRA pattern may take: the framework's wildcard is a regex of
the recipe's own text, and one that backtracks would hang the check (it is an input error instead)."""


def wildcard_matches(pattern: str, path: str, release: Release, *, key: str = "peft") -> bool:
    """Whether the framework's wildcard ``pattern`` matches module ``path``, within :data:`WILDCARD_SECONDS`."""
    try:
        return wildcard_regex(pattern, release).match(path, timeout=WILDCARD_SECONDS) is not None
    except TimeoutError:
        raise RecipeError(f"pattern {pattern!r} takes over {WILDCARD_SECONDS:g} s to match {path!r}: the framework "
                          "compiles it as a regex, and this one backtracks; write it with fewer nested repeats",
                          key=key) from None


@lru_cache(maxsize=1024)
def wildcard_regex(pattern: str, release: Release) -> regex.Pattern[str]:
    """The framework's ``_compile_wildcard_pattern`` of ``release``; literal text is not escaped
    there (a ``.`` matches any character), so it is not escaped here either. Compiled by ``regex``
    in ``VERSION0`` (``re``'s syntax and matching, the framework's engine) for its time limit."""
    if release == "0.6":
        translated = re.sub(r"(?<!\.)\*", r".*", pattern)
        return regex.compile("^" + re.sub(r"\.\*", "(.*)", translated) + "$", flags=regex.VERSION0)
    # 0.7: a ".*" after a whole dotted segment or a numeric index keeps its dot as a separator.
    parts = re.split(r"(\.?\*)", pattern)
    translated = ""
    for index, part in enumerate(parts):
        if index % 2 == 0:
            translated += part
        elif part == ".*" and (
            parts[index - 1].startswith(".") or (index == 1 and parts[0]) or re.search(r"\.\d+$", parts[index - 1])
        ):
            translated += r"(\..*)?"
        else:
            translated += "(.*)"
    re.compile("^" + translated + "$")  # the framework's engine must accept it: its error is the recipe's
    return regex.compile("^" + translated + "$", flags=regex.VERSION0)


def _selected(path: str, spec: LoraSpec, release: Release) -> bool:
    if spec.match_all_linear:
        return True
    if spec.target_modules:
        return _targeted(path, spec, release)
    return path not in spec.exclude_modules and not any(
        wildcard_matches(p, path, release, key="peft.exclude_modules") for p in spec.exclude_modules
    )


def _targeted(path: str, spec: LoraSpec, release: Release) -> bool:
    """Whether a `target_modules` pattern names ``path`` (the framework's ``ModuleMatcher``, rule 2)."""
    return any(path == p or wildcard_matches(p, path, release, key="peft.target_modules") for p in spec.target_modules)


def lora_targets(structure: ModelStructure, spec: LoraSpec, release: Release = CURRENT_RELEASE) -> list[str]:
    """Paths of the Linear modules the framework patches (each module object once, first path)."""
    return [
        path for path in structure.modules
        if path in structure.linear_modules and path not in structure.module_aliases
        and _selected(path, spec, release)
    ]


def with_lora_adapters(
    structure: ModelStructure, spec: LoraSpec, release: Release = CURRENT_RELEASE
) -> ModelStructure:
    """The structure after injection and the PEFT baseline of ``release``. A `target_modules` pattern that
    matches the framework's grouped experts is refused: the framework patches them with adapters of their own
    (``GroupedExpertsLoRA``), which are not modelled here."""
    experts = [path for path, kind in structure.modules.items()
               if kind in GROUPED_EXPERTS and path not in structure.module_aliases and _targeted(path, spec, release)]
    if experts:
        raise RecipeError(f"matches {experts[0]}, the framework's grouped experts ({structure.modules[experts[0]]}), "
                          "which its LoRA patches with adapters of their own (GroupedExpertsLoRA) that mmfreeze does "
                          "not model: not computed; match Linear modules alone", key="peft.target_modules")
    targets = lora_targets(structure, spec, release)
    paths_of = _paths_by_module(structure, targets)
    added: dict[str, str] = {}
    """Each adapter module's path -> its first path."""
    for target in targets:
        for child in ("lora_A", "lora_B"):
            first, *others = (f"{path}.{child}" for path in paths_of[target])
            added.update({path: first for path in (first, *others)})
    adapted = replace(
        structure,
        modules={**structure.modules, **dict.fromkeys(added, "Linear")},
        module_aliases={**structure.module_aliases, **{p: f for p, f in added.items() if p != f}},
        linear_modules=structure.linear_modules | set(added),
        parameters=(*_patched(structure, targets), *_adapters(structure, targets, paths_of, spec)),
    )
    return peft_baseline(adapted, release)


def _paths_by_module(structure: ModelStructure, targets: Sequence[str]) -> dict[str, list[str]]:
    """Every path that reaches each target module: its first path, then its aliases."""
    paths = {target: [target] for target in targets}
    for alias, first in structure.module_aliases.items():
        if first in paths:
            paths[first].append(alias)
    return paths


def _patched(structure: ModelStructure, targets: Sequence[str]) -> Iterator[ParameterInfo]:
    """The existing parameters; a patched Linear's own weight and bias are frozen by the patch."""
    own = {f"{target}.{leaf}" for target in targets for leaf in ("weight", "bias")}
    for info in structure.parameters:
        yield replace(info, requires_grad=False) if info.name in own else info


def _adapters(
    structure: ModelStructure, targets: Sequence[str], paths_of: Mapping[str, list[str]], spec: LoraSpec
) -> Iterator[ParameterInfo]:
    for target in targets:
        out_features, in_features = structure.parameters_by_name[f"{target}.weight"].shape
        shapes = {"lora_A.weight": (spec.dim, in_features), "lora_B.weight": (out_features, spec.dim)}
        if spec.use_dora:
            shapes["lora_magnitude"] = (out_features,)
        for leaf, shape in shapes.items():
            first, *others = (f"{path}.{leaf}" for path in paths_of[target])
            yield ParameterInfo(name=first, shape=shape, requires_grad=True, aliases=tuple(others))


def peft_baseline(structure: ModelStructure, release: Release) -> ModelStructure:
    """Trainability right after injection, as each release sets it.

    0.7 sets ``requires_grad = "lora_" in name`` over ``named_parameters(remove_duplicate=False)``,
    so a tied parameter takes its last name's verdict. 0.6 froze every parameter whose first name
    lacks ``lora_`` and left the adapters as created (trainable).
    """
    if release == "0.6":
        decide = lambda info: info.requires_grad and ADAPTER_MARK in info.name  # noqa: E731
    else:
        decide = lambda info: ADAPTER_MARK in info.names[-1]  # noqa: E731
    return replace(structure, parameters=tuple(replace(info, requires_grad=decide(info)) for info in structure.parameters))


def add_live_lora_adapters(model: nn.Module, targets: Sequence[str], spec: LoraSpec) -> None:
    """The same injection on a live model (meta or real): adapter modules and parameters named and
    shaped as :func:`with_lora_adapters` says; trainability is left to the caller's frozen set."""
    import torch
    from torch import nn

    for path in targets:
        linear = model.get_submodule(path)
        device = linear.weight.device
        linear.lora_A = nn.Linear(linear.in_features, spec.dim, bias=False, device=device)
        linear.lora_B = nn.Linear(spec.dim, linear.out_features, bias=False, device=device)
        if spec.use_dora:
            linear.lora_magnitude = nn.Parameter(torch.empty(linear.out_features, device=device))
