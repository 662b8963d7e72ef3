"""The one label every report gives a parameter: the module a reviewer recognises (pure).

- a parameter a resolved multimodal module owns: ``model.visual (vision tower)``;
- a language-model parameter: ``language model: model.language_model.layers``;
- anything else (unowned, or no inventory at all): its name prefix (:func:`prefix_group`).

Snapshot, guard and migrate reports all label through :func:`parameter_labeller`, so one parameter
has one name in every report, and count each label's parameters with :func:`group_names`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from mmfreeze.counts import count_text
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.spec import MultimodalModuleSpec

LANGUAGE_LABEL = "language model"


def prefix_group(name: str) -> str:
    """The module path up to the first layer index: ``model.layers.3.mlp.w`` -> ``model.layers``.

    Names without an index group by their parent module (``lm_head.weight`` -> ``lm_head``).
    """
    parts = name.split(".")
    for position, part in enumerate(parts[:-1]):
        if part.isdigit():
            return ".".join(parts[:position]) or parts[0]
    return ".".join(parts[:-1]) or name


def module_label(spec: MultimodalModuleSpec) -> str:
    """``model.visual (vision tower)``; a module without a role is a ``module``."""
    return f"{spec.path} ({spec.modality} {spec.role or 'module'})"


def parameter_labels(inventory: ResolvedInventory) -> dict[str, str]:
    """Raw parameter name -> label, for the parameters a resolved module or the language model owns."""
    raw = inventory.raw_parameter_names
    labels = {raw[name]: module_label(info.spec) for info in inventory.modules for name in info.parameters}
    for name in inventory.language_model.parameters:
        labels[raw[name]] = f"{LANGUAGE_LABEL}: {prefix_group(raw[name])}"
    return labels


def parameter_labeller(inventory: ResolvedInventory | None) -> Callable[[str], str]:
    """A raw name -> label function: resolved owner first, name prefix for the rest."""
    labels: Mapping[str, str] = parameter_labels(inventory) if inventory is not None else {}
    return lambda name: labels.get(name) or prefix_group(name)


@dataclass(frozen=True, kw_only=True)
class ModuleGroup:
    """Parameters of one module (resolved) or name prefix that moved the same way."""

    label: str
    tensors: int
    parameters: int
    """Element count (numel); names the current model no longer has count 0."""
    names: tuple[str, ...]

    def describe(self) -> str:
        """``12 tensors / 3.34B parameters``."""
        return count_text(self.tensors, self.parameters)


def group_names(
    names: Iterable[str], *, numel_of: Mapping[str, int], group_of: Callable[[str], str]
) -> tuple[ModuleGroup, ...]:
    """Names grouped by label, groups sorted by label, names sorted within."""
    grouped: dict[str, list[str]] = {}
    for name in names:
        grouped.setdefault(group_of(name), []).append(name)
    return tuple(
        ModuleGroup(
            label=label,
            tensors=len(members),
            parameters=sum(numel_of.get(name, 0) for name in members),
            names=tuple(sorted(members)),
        )
        for label, members in sorted(grouped.items())
    )


def describe_total(groups: Iterable[ModuleGroup]) -> str:
    """The tensors and parameters of all ``groups`` together, as :meth:`ModuleGroup.describe` says them."""
    groups = tuple(groups)
    return count_text(sum(group.tensors for group in groups), sum(group.parameters for group in groups))
