"""LoRA injection as the training code does it, on the structure alone.

Recipes with a `peft:` section trained with LoRA adapters injected before freezing: every matched
``nn.Linear`` gains ``lora_A`` (dim x in) and ``lora_B`` (out x dim), the base weights are frozen
by the injection, and only then does `freeze_config` run (so adapters inside a frozen module are
frozen too). Matching follows the NeMo-AutoModel ``PeftConfig`` rules: a pattern matches a module
path exactly, by its last component, or as an ``fnmatch`` wildcard; ``exclude_modules`` wins;
``match_all_linear`` takes every Linear except ``lm_head``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Any

from mmfreeze.exceptions import RecipeError
from mmfreeze.models.structure import ModelStructure, ParameterInfo

LINEAR_CLASSES = frozenset({"Linear"})
DEFAULT_DIM = 8


def _matches(path: str, patterns: Sequence[str]) -> bool:
    leaf = path.rsplit(".", 1)[-1]
    return any(path == p or leaf == p or fnmatchcase(path, p) for p in patterns)


def lora_targets(structure: ModelStructure, peft: Mapping[str, Any], *, source: str | None = None) -> list[str]:
    """Module paths of the Linear layers the recipe's `peft:` section injects adapters into."""
    targets = _patterns(peft, "target_modules", source)
    excludes = _patterns(peft, "exclude_modules", source)
    match_all = bool(peft.get("match_all_linear", False))
    if not targets and not match_all:
        raise RecipeError(
            "names no target_modules and match_all_linear is not true, so LoRA would inject nothing",
            source=source, key="peft",
        )
    return [
        path for path, class_name in structure.modules.items()
        if class_name in LINEAR_CLASSES and path not in structure.module_aliases
        and (match_all and path.rsplit(".", 1)[-1] != "lm_head" or _matches(path, targets))
        and not _matches(path, excludes)
    ]


def _patterns(peft: Mapping[str, Any], key: str, source: str | None) -> list[str]:
    value = peft.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RecipeError(f"must be a list of module name patterns, got {value!r}", source=source, key=f"peft.{key}")
    return value


def with_lora_adapters(structure: ModelStructure, peft: Mapping[str, Any], *, source: str | None = None) -> ModelStructure:
    """The structure after LoRA injection: base weights frozen, adapters added trainable."""
    dim = peft.get("dim", DEFAULT_DIM)
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise RecipeError(f"must be a positive integer, got {dim!r}", source=source, key="peft.dim")
    targets = lora_targets(structure, peft, source=source)
    modules = dict(structure.modules)
    for path in targets:
        modules[f"{path}.lora_A"] = "Linear"
        modules[f"{path}.lora_B"] = "Linear"
    base = tuple(replace(info, requires_grad=False) for info in structure.parameters)
    return replace(
        structure,
        modules=modules,
        parameters=base + tuple(_adapters(structure, targets, dim)),
    )


def _adapters(structure: ModelStructure, targets: Sequence[str], dim: int) -> Iterator[ParameterInfo]:
    for path in targets:
        out_features, in_features = structure.parameters_by_name[f"{path}.weight"].shape
        yield ParameterInfo(name=f"{path}.lora_A.weight", shape=(dim, in_features), requires_grad=True)
        yield ParameterInfo(name=f"{path}.lora_B.weight", shape=(out_features, dim), requires_grad=True)
