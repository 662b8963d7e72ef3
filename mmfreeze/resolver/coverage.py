"""Verifying the architecture table against the real module trees of the installed transformers
(either end of the supported range: CI runs it under 5.24.0 and, in the framework environment, 5.18.0).

A candidate is every class transformers maps from an image-text-to-text or multimodal-LM model
type, plus the text-only decoders the table lists (distillation teachers and text contrast
recipes resolve to a language model and no multimodal module). Each is built on the meta device
from its default config (``CONFIG_MAPPING[model_type]()``), from the verification kwargs below
where the default leaves the multimodal parts out (or a release cannot build it), or from the
bundled checkpoint config where transformers cannot build the default at all; then resolved and
checked: declared paths exist, roles and modalities are as declared, every parameter has exactly
one owner or a declared reason, and the table (not the heuristic) answered.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mmfreeze.exceptions import MmfreezeError, ModelBuildError
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.resolver.entry import ArchitectureEntry, ModuleDecl
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.paths import is_under
from mmfreeze.resolver.resolve import resolve_structure
from mmfreeze.resolver.table import ARCHITECTURE_TABLE

# Model types whose default config leaves a declared multimodal part out; these kwargs add it.
VERIFY_CONFIG_KWARGS: Mapping[str, Mapping[str, Any]] = {
    "idefics": {"use_resampler": True},
    "gemma4": {"vision_config": {}, "audio_config": {}},
    "gemma4_unified": {"vision_config": {}, "audio_config": {}},
    # transformers 5.18 copies the default pad_token_id (128002) into a 32000-token text config,
    # which cannot build; no pad token builds the same tree in every release.
    "idefics3": {"pad_token_id": None},
    "smolvlm": {"pad_token_id": None},
    # transformers 5.18 has no default encoder/decoder; these are 5.24's defaults.
    "vision-encoder-decoder": {"encoder": {"model_type": "vit"}, "decoder": {"model_type": "bert"}},
}


# Model types whose default config transformers cannot build on meta; the bundled checkpoint
# config (mmfreeze/registry/configs) stands in.
VERIFY_REGISTRY_CONFIGS: Mapping[str, str] = {
    "aya_vision": "CohereLabs/aya-vision-8b",
    "qwen3_omni_moe": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
}

# Text-only decoders in the table (table_text.py): class name -> model type.
TEXT_ONLY_CLASSES: Mapping[str, str] = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}


@dataclass(frozen=True, kw_only=True)
class Candidate:
    class_name: str
    model_type: str

    @property
    def multimodal(self) -> bool:
        return self.class_name not in TEXT_ONLY_CLASSES


@dataclass(frozen=True, kw_only=True)
class CoverageResult:
    """One candidate class: verified when ``problems`` is empty."""

    candidate: Candidate
    problems: tuple[str, ...]

    @property
    def verified(self) -> bool:
        return not self.problems


def candidate_classes() -> tuple[Candidate, ...]:
    """Every (class, first model type) the two multimodal auto mappings name, sorted by class."""
    from transformers.models.auto import modeling_auto

    found: dict[str, str] = {}
    for mapping in (
        modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        modeling_auto.MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES,
    ):
        for model_type, names in sorted(mapping.items()):
            for name in (names,) if isinstance(names, str) else names:
                found.setdefault(name, model_type)
    found.update(TEXT_ONLY_CLASSES)
    return tuple(Candidate(class_name=name, model_type=found[name]) for name in sorted(found))


def build_structure(candidate: Candidate) -> ModelStructure:
    """Build the candidate on the meta device and read its structure."""
    import transformers
    from transformers import CONFIG_MAPPING

    from mmfreeze.models.build import build_meta_model

    # Copies: transformers 5.18 pops keys from the nested sub-config dicts it is given.
    try:
        if candidate.model_type in VERIFY_REGISTRY_CONFIGS:
            config_json = find_model_config(VERIFY_REGISTRY_CONFIGS[candidate.model_type]).config
            config = CONFIG_MAPPING[candidate.model_type].from_dict(copy.deepcopy(dict(config_json)))
        else:
            kwargs = copy.deepcopy(dict(VERIFY_CONFIG_KWARGS.get(candidate.model_type, {})))
            config = CONFIG_MAPPING[candidate.model_type](**kwargs)
    except Exception as error:  # some releases refuse a default config (vision-encoder-decoder in 5.18)
        raise ModelBuildError(
            f"transformers cannot make the config for {candidate.model_type!r}: {type(error).__name__}: {error}"
        ) from error
    return structure_of(build_meta_model(config, getattr(transformers, candidate.class_name)))


def verify_candidate(candidate: Candidate) -> CoverageResult:
    """Build, resolve and check one candidate; every failure becomes a problem line."""
    try:
        structure = build_structure(candidate)
    except MmfreezeError as error:
        return CoverageResult(candidate=candidate, problems=(f"cannot build on meta: {error}",))
    entry = ARCHITECTURE_TABLE.get(candidate.class_name)
    if entry is None:
        return CoverageResult(candidate=candidate, problems=("builds, but is not in the architecture table",))
    try:
        with _HeuristicWarnings() as warnings:
            inventory = resolve_structure(structure)
    except MmfreezeError as error:
        return CoverageResult(candidate=candidate, problems=(str(error),))
    problems = [*check_inventory(structure, entry, inventory), *warnings.messages]
    return CoverageResult(candidate=candidate, problems=tuple(problems))


def check_inventory(structure: ModelStructure, entry: ArchitectureEntry, inventory: ResolvedInventory) -> Iterator[str]:
    """The table-entry checks, each failure as one line."""
    if inventory.source != "table":
        yield f"resolved from {inventory.source!r}, not the table"
    declared = {_declared_key(structure, decl) for decl in entry.modules}
    resolved = {(m.spec.path, m.spec.modality, m.spec.role) for m in inventory.modules}
    if declared != resolved:
        yield f"declared modules {sorted(declared, key=str)} but resolved {sorted(resolved, key=str)}"
    yield from _check_unowned(entry, inventory)
    owned = sum(m.numel for m in inventory.modules) + inventory.language_model.numel
    # Candidates are built unwrapped, so raw and canonical parameter names coincide.
    unowned = sum(info.numel for info in structure.parameters if info.name in inventory.unowned)
    if owned + unowned != structure.total_numel:
        yield f"owners count {owned + unowned} elements, the model has {structure.total_numel}"


def _declared_key(structure: ModelStructure, decl: ModuleDecl) -> tuple[str | None, str, str | None]:
    path = next((p for p in decl.paths if p in structure.modules), None)
    return path, decl.modality, decl.role


def _check_unowned(entry: ArchitectureEntry, inventory: ResolvedInventory) -> Iterator[str]:
    undeclared = [name for name in inventory.unowned if name not in inventory.unowned_reasons]
    if undeclared:
        yield f"parameters owned by nothing and not declared unowned: {undeclared[:8]}"
    for declared in entry.unowned:
        if not any(is_under(name, declared.path) for name in inventory.unowned):
            yield f"declared unowned {declared.path!r} matches no unowned parameter"


class _HeuristicWarnings(logging.Handler):
    """Collects warnings the heuristic logs while resolving a table class."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"heuristic warning: {record.getMessage()}")

    def __enter__(self) -> _HeuristicWarnings:
        logging.getLogger("mmfreeze.resolver.heuristic").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("mmfreeze.resolver.heuristic").removeHandler(self)
