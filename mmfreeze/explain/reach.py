"""`explain`'s reachability verdict: per data mix, what the recipe trains and never reaches, what
that does under its own distributed settings, and the keys that fix it (plain data; the CLI renders it).

What an unreached trainable tensor does depends on the strategy nemo-automodel 0.7 runs
(``recipes/_dist_utils.py``, ``components/distributed``): DDP's ``find_unused_parameters`` is off
unless the recipe turns it on, and FSDP2 reduce-scatters unused parameters only under context
parallelism (``parallelizer.py``). mmfreeze's dummy forward (``distributed.multimodal.<modality>.
run_dummy_forward``) runs a tower on batches without its input, which gives it a zero gradient.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmfreeze.distributed.dummy_forward import DUMMY_FORWARD_TABLE
from mmfreeze.distributed.legacy_keys import multimodal_section
from mmfreeze.models.structure import ModelStructure
from mmfreeze.reachability.mix import WHERE as MIXES_KEY
from mmfreeze.reachability.recipe import MixReach, RecipeReach
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.labels import ModuleGroup, module_label
from mmfreeze.resolver.paths import name_prefixes
from mmfreeze.resolver.spec import MultimodalModuleSpec

INPUTS_OF_MODALITY: Mapping[str, tuple[str, ...]] = {"vision": ("image", "video"), "audio": ("audio",)}
"""The batch inputs that run each modality's modules."""


@dataclass(frozen=True, kw_only=True)
class Strategy:
    """The recipe's `distributed` facts that decide what a missing gradient does."""

    name: str
    cp_size: int
    find_unused_parameters: bool

    @classmethod
    def of(cls, distributed: Mapping[str, Any] | None) -> Strategy:
        section = distributed or {}
        cp = section.get("cp_size")
        return cls(name=str(section.get("strategy") or "fsdp2").lower(), cp_size=cp if isinstance(cp, int) else 1,
                   find_unused_parameters=section.get("find_unused_parameters") is True)

    def consequence(self) -> str:
        if self.name == "ddp" and not self.find_unused_parameters:
            return ("DDP (find_unused_parameters: false) stops at the next step: \"Expected to have finished "
                    "reduction in the prior iteration\"")
        if self.name == "ddp":
            return "DDP (find_unused_parameters: true) marks them unused every step; their gradients stay None and they never train"
        if self.name == "fsdp2" and self.cp_size > 1:
            return ("FSDP2 under context parallelism (cp_size > 1) reduce-scatters zeros for them: the optimizer "
                    "steps them with a zero gradient (weight decay still moves them)")
        if self.name == "fsdp2":
            return ("FSDP2 (cp_size 1: no unused-parameter reduction) leaves their gradients None: the optimizer "
                    "keeps no state for them and never changes them, and a resume whose optimizer state expects them fails")
        return f"strategy {self.name}: not analysed; their gradients stay None"


def explain_reach(
    reach: RecipeReach, structure: ModelStructure, inventory: ResolvedInventory, distributed: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The verdict for every mix of ``reach``; ``structure`` is the trained one."""
    strategy = Strategy.of(distributed)
    specs = {module_label(info.spec): info.spec for info in inventory.modules}
    dummy = _dummy_settings(distributed, structure.class_name)
    return {
        "mixes": reach.mixes.describe(),
        "mixes_known": reach.mixes.known,
        "results": [_mix(result, structure, specs, strategy, dummy) for result in reach.results],
    }


def _mix(result: MixReach, structure: ModelStructure, specs: Mapping[str, MultimodalModuleSpec],
         strategy: Strategy, dummy: Mapping[str, str]) -> dict[str, Any]:
    groups = []
    for group in result.groups:
        spec = specs.get(group.label)
        missing = _missing_input(result.mix, spec)
        consequence = strategy.consequence()
        if missing and dummy.get(spec.modality) == "on":
            consequence = (f"mmfreeze's dummy forward runs {spec.modality} on these batches: a zero gradient each "
                           "step, so no error, and no learning from them")
        groups.append({"module": group.label, "tensors": group.tensors, "parameters": group.parameters,
                       "consequence": consequence, "fixes": _fixes(group, spec, result.mix, missing, structure, dummy)})
    return {"mix": result.mix, "method": result.method, "not_probed": result.not_probed, "groups": groups}


def _fixes(group: ModuleGroup, spec: MultimodalModuleSpec | None, mix: str, missing: str, structure: ModelStructure,
           dummy: Mapping[str, str]) -> list[str]:
    paths = covering_modules(group.names, structure)
    if spec is not None and spec.role and paths == [spec.path]:
        fixes = [f"freeze it: freeze_config.{spec.modality}: {{{spec.role}: true}}"]
    else:
        fixes = [f"freeze it: freeze_config.modules: [{', '.join(paths)}]"]
    if spec is not None and missing:
        if dummy.get(spec.modality) != "unavailable":
            fixes.append(f"or give it a zero gradient on these batches: distributed.multimodal.{spec.modality}.run_dummy_forward: true")
        fixes.append(f"or, if the data carries {spec.modality} inputs, say so: {MIXES_KEY}: [{mix}+{missing}]")
    return fixes


def _missing_input(mix: str, spec: MultimodalModuleSpec | None) -> str:
    """The input that would run ``spec``'s modality when ``mix`` carries none of its inputs (its
    first: ``image`` for vision); ``""`` when it carries one, or the module has no known input."""
    inputs = INPUTS_OF_MODALITY.get(spec.modality, ()) if spec is not None else ()
    return "" if any(name in mix.split("+") for name in inputs) else next(iter(inputs), "")


def _dummy_settings(distributed: Mapping[str, Any] | None, class_name: str) -> dict[str, str]:
    """Modality -> ``on`` (forced or left to ``auto`` where the model has one: ``auto`` runs it when
    ranks may differ, which a text-only batch on some ranks is), ``off``, or ``unavailable``."""
    section, _ = multimodal_section(distributed)
    capable = DUMMY_FORWARD_TABLE.get(class_name)
    settings = {}
    for modality in INPUTS_OF_MODALITY:
        if capable is None or modality not in capable.modalities:
            settings[modality] = "unavailable"
            continue
        policy = section.get(modality) if isinstance(section.get(modality), Mapping) else {}
        settings[modality] = "off" if policy.get("run_dummy_forward", "auto") is False else "on"
    return settings


def covering_modules(names: Sequence[str], structure: ModelStructure) -> list[str]:
    """The fewest module paths whose parameters are exactly ``names`` (a parameter's own name where
    its module holds others): what a ``freeze_config.modules`` list must name."""
    chosen = set(names)
    # A module holding a parameter outside ``names`` is blocked, and so is every module above it.
    blocked = {path for info in structure.parameters if info.name not in chosen for path in name_prefixes(info.name)}
    return sorted({next((path for path in name_prefixes(name) if path not in blocked), name) for name in chosen})
