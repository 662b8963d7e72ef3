"""Prove a call site's rewrite on every model it is bound to, or say why it cannot be.

For each bound model (built on the meta device by mmfreeze's loader, once per run) the framework's
result for the literal section is computed as for a recipe (:class:`SectionInput`); preserve mode
proposes a new section on each model, and the first proposal whose frozen set equals the
framework's on every bound model is the rewrite. A model id is built with the first Auto class
that maps its config (image-text-to-text, multimodal LM, causal LM, speech seq2seq); a recipe is
used with its own model, `peft:` and `multimodal` overrides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmfreeze.counts import count_text
from mmfreeze.exceptions import MmfreezeError, ModelBuildError
from mmfreeze.freeze.recipe_model import recipe_trained_model
from mmfreeze.memo import memoized
from mmfreeze.migrate.preserve import preserve_section
from mmfreeze.migrate.python.bindings import Binding
from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.migrate.section import SectionInput
from mmfreeze.models.loader import ModelRequest
from mmfreeze.recipes.targets import AUTO_CLASSES
from mmfreeze.resolver import resolve_structure
from mmfreeze.boundary.releases import FrameworkRules
from mmfreeze.workspace import Workspace



@dataclass(frozen=True, kw_only=True)
class ProofTarget:
    """One model a call site may receive, as the section finds it (after PEFT for a recipe with `peft:`)."""

    name: str
    targets: FreezeTargets
    rules: FrameworkRules


@dataclass(frozen=True, kw_only=True)
class Proof:
    """The proven new section, or why there is none."""

    section: dict[str, Any] | None
    reason: str = ""


class BoundModels:
    """Builds the models call sites are bound to, each once per run, in the run's workspace: a bound
    recipe's model is the one its recipe trains, built by the same builder as a YAML proof's."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._built: dict[tuple[str, str], ProofTarget] = {}

    def targets(self, binding: Binding, *, directory: Path) -> list[ProofTarget]:
        """Every model ``binding`` names; a model that cannot be built raises."""
        found = [memoized(self._built, ("model", model_id), lambda m=model_id: self._model(m, directory))
                 for model_id in binding.models]
        for name in binding.recipes:
            path = (directory / name).resolve()
            found.append(memoized(self._built, ("recipe", str(path)), lambda p=path, n=name: self._recipe(p, n)))
        return found

    def _model(self, model_id: str, directory: Path) -> ProofTarget:
        errors = []
        for auto_class in AUTO_CLASSES:
            settings = self._workspace.settings
            request = ModelRequest(model_id=model_id, auto_class=auto_class, recipe_dir=directory,
                                   configs_dir=settings.configs, local_models=settings.local_models, source=model_id)
            try:
                structure = self._workspace.structure(request)
            except ModelBuildError as error:
                errors.append(error.message)
                continue
            return ProofTarget(name=model_id, rules=self._workspace.framework,
                               targets=FreezeTargets(structure=structure, inventory=resolve_structure(structure)))
        raise ModelBuildError(f"no Auto class builds it ({'; '.join(errors)})", source=model_id)

    def _recipe(self, path: Path, name: str) -> ProofTarget:
        recipe = self._workspace.recipe(path)
        trained = recipe_trained_model(recipe, self._workspace.structure(self._workspace.request(recipe, probed=False)))
        return ProofTarget(name=name, targets=trained, rules=self._workspace.framework)


def prove(section: Mapping[str, Any], targets: Sequence[ProofTarget], *, source: str) -> Proof:
    """The first preserve-mode proposal that freezes what the replaced call froze on every target.

    The replaced call is the framework's ``apply_parameter_freezing``, which applies no invariant
    freezes; ``apply_freeze_config`` ends with them. Where they freeze a parameter the call left
    trainable, no rewrite is equal and the call is reported."""
    tasks = [SectionInput(structure=t.targets.structure, section=section, inventory=t.targets.inventory,
                          source=f"{source} ({t.name})", rules=t.rules) for t in targets]
    proposals: list[dict[str, Any]] = []
    for target, task in zip(targets, tasks, strict=True):
        try:
            proposals.append(preserve_section(task.structure, section, task.inventory, source=task.source,
                                              rules=task.rules).section)
        except MmfreezeError as error:
            return Proof(section=None, reason=f"on {target.name}: {error.message}")
    for task, target in zip(tasks, targets, strict=True):
        if extra := task.original.frozen - task.call_frozen:
            size = count_text(len(extra), sum(info.numel for info in task.structure.parameters if info.name in extra))
            return Proof(section=None, reason=(
                f"on {target.name}: apply_freeze_config also applies the framework's invariant freezes, which "
                f"freeze {size} this apply_parameter_freezing call leaves trainable (e.g. {min(extra)})"))
    for index, proposal in enumerate(proposals):
        if proposal not in proposals[:index] and all(_equal(task, proposal) for task in tasks):
            return Proof(section=proposal)
    shown = "; ".join(f"{t.name} needs {p}" for t, p in zip(targets, proposals, strict=True))
    return Proof(section=None, reason=f"no single new-vocabulary dict freezes the same on every bound model ({shown}); "
                                      "split the call per model, or keep it")


def _equal(task: SectionInput, proposal: Mapping[str, Any]) -> bool:
    try:
        return task.frozen_with(proposal) == task.call_frozen
    except MmfreezeError:
        return False
