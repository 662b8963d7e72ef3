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
    "gemma4_assistant": "google/gemma-4-E2B-it-assistant",  # its default text config fails its own validation
}

# Text-only decoders in the table (table_text.py): class name -> model type.
TEXT_ONLY_CLASSES: Mapping[str, str] = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Gemma4AssistantForCausalLM": "gemma4_assistant",
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

    from mmfreeze.models.build import build_meta_model, transformers_config_class

    # transformers' own config class, not one nemo-automodel registered over it in this process.
    config_class = transformers_config_class(candidate.model_type)
    # Copies: transformers 5.18 pops keys from the nested sub-config dicts it is given.
    try:
        if candidate.model_type in VERIFY_REGISTRY_CONFIGS:
            config_json = find_model_config(VERIFY_REGISTRY_CONFIGS[candidate.model_type]).config
            config = config_class.from_dict(copy.deepcopy(dict(config_json)))
        else:
            kwargs = copy.deepcopy(dict(VERIFY_CONFIG_KWARGS.get(candidate.model_type, {})))
            config = config_class(**kwargs)
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
    declared = {_declared_key(structure, decl) for decl in entry.modules} - {None}
    resolved = {(m.spec.path, m.spec.modality, m.spec.role) for m in inventory.modules}
    if declared != resolved:
        yield f"declared modules {sorted(declared, key=str)} but resolved {sorted(resolved, key=str)}"
    yield from _check_unowned(entry, inventory)
    owned = sum(m.numel for m in inventory.modules) + inventory.language_model.numel
    # Candidates are built unwrapped, so raw and canonical parameter names coincide.
    unowned = sum(info.numel for info in structure.parameters if info.name in inventory.unowned)
    if owned + unowned != structure.total_numel:
        yield f"owners count {owned + unowned} elements, the model has {structure.total_numel}"


def _declared_key(structure: ModelStructure, decl: ModuleDecl) -> tuple[str | None, str, str | None] | None:
    """(path, modality, role) of a declaration; ``None`` for an optional one the model lacks."""
    path = next((p for p in decl.paths if p in structure.modules), None)
    if path is None and not decl.required:
        return None
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


# -- NeMo AutoModel's own classes (builder = framework) -----------------------------------------
#
# Every architecture the framework builds itself (mmfreeze/models/framework_classes.json) is built
# on meta the framework's way (mmfreeze.models.framework_build) from a bundled config: the
# published one in mmfreeze/registry/configs when there is one, else the framework config class's
# defaults (plus FRAMEWORK_CONFIG_KWARGS where the defaults leave a multimodal part out). Needs the
# framework installed and importable (.venv-framework).

FRAMEWORK_REGISTRY_CONFIGS: Mapping[str, str] = {
    "Gemma4ForConditionalGeneration": "google/gemma-4-E2B-it",
    "KimiK25ForConditionalGeneration": "moonshotai/Kimi-K2.5",
    "LlamaForCausalLM": "meta-llama/Llama-3.1-8B-Instruct",
    "Mistral3ForConditionalGeneration": "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    "Qwen2ForCausalLM": "Qwen/Qwen2.5-7B-Instruct",
    "Qwen2_5OmniForConditionalGeneration": "Qwen/Qwen2.5-Omni-7B",
    "Qwen2_5OmniModel": "Qwen/Qwen2.5-Omni-7B",
    "Qwen2_5OmniThinkerForConditionalGeneration": "Qwen/Qwen2.5-Omni-7B",
    "Qwen3ForCausalLM": "Qwen/Qwen3-8B",
    "Qwen3OmniMoeForConditionalGeneration": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
    "Qwen3VLForConditionalGeneration": "Qwen/Qwen3-VL-8B-Instruct",
    "Qwen3VLMoeForConditionalGeneration": "Qwen/Qwen3-VL-30B-A3B-Instruct",
    "Qwen3_5ForConditionalGeneration": "Qwen/Qwen3.5-9B",
    "Qwen3_5MoeForConditionalGeneration": "Qwen/Qwen3.5-35B-A3B",
}
"""Architecture -> bundled published config (mmfreeze/registry/configs); its ``architectures`` is
set to the key, the name the framework dispatches on."""

FRAMEWORK_CONFIG_TYPES: Mapping[str, str] = {
    "BagelForConditionalGeneration": "bagel",
    "BagelForUnifiedMultimodal": "bagel",
    "Gemma4UnifiedForConditionalGeneration": "gemma4_unified",
    "Glm5NextForConditionalGeneration": "glm5_next",
    "HunyuanImage3ForCausalMM": "hunyuan_image_3_moe",
    "InklingForConditionalGeneration": "inkling_mm_model",
    "KimiK25VLForConditionalGeneration": "kimi_k25",
    "KimiK3ForConditionalGeneration": "kimi_k3",
    "KimiVLForConditionalGeneration": "kimi_vl",
    "LLaVAOneVision1_5_ForConditionalGeneration": "llavaonevision1_5",
    "LlamaNemotronVLModel": "llama_nemotron_vl",
    "MiniMaxM3SparseForConditionalGeneration": "minimax_m3_vl",
    "MuseGlimmerForConditionalGeneration": "muse_glimmer",
    "Qwen3_8_FlashNextForConditionalGeneration": "qwen3_8_flash_next",
    "Qwen4ExpForConditionalGeneration": "qwen4_exp",
    "Step3p6ForConditionalGeneration": "step3p5v",
    "Step3p7ForConditionalGeneration": "step3p7",
}
"""Architecture -> model type whose (framework or transformers) config class defaults stand in,
for multimodal architectures without a bundled config."""

FRAMEWORK_CONFIG_KWARGS: Mapping[str, Mapping[str, Any]] = {
    "bagel": {"vision_config": {}},
    "gemma4_unified": {"vision_config": {}, "audio_config": {}},
}
"""Model type -> kwargs adding the multimodal parts its defaults leave out."""


@dataclass(frozen=True, kw_only=True)
class FrameworkResult:
    """One framework architecture: built (``class_name``), resolved (``modules``), checked (``problems``)."""

    architecture: str
    config: str
    """Where its config came from: ``registry:<model id>`` or ``defaults:<model type>``."""
    class_name: str = ""
    modules: tuple[tuple[str, str, str | None], ...] = ()
    """(path, modality, role) of every resolved multimodal module."""
    problems: tuple[str, ...] = ()
    built: bool = False

    @property
    def verified(self) -> bool:
        return self.built and not self.problems


def framework_architectures() -> tuple[str, ...]:
    """Every architecture name the framework builds its own class for, from the bundled JSON."""
    from mmfreeze.models.framework import framework_data

    return tuple(sorted(framework_data()["architectures"]))


def framework_config(architecture: str) -> tuple[Any, str]:
    """The config object the framework would make for ``architecture`` from a bundled config."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from mmfreeze.models.framework_build import build_framework_config

    if architecture in FRAMEWORK_REGISTRY_CONFIGS:
        model_id = FRAMEWORK_REGISTRY_CONFIGS[architecture]
        config_json = {**find_model_config(model_id).config, "architectures": [architecture]}
        return build_framework_config(config_json), f"registry:{model_id}"
    from nemo_automodel._transformers.registry import ModelRegistry, resolve_custom_config_cls

    model_type = FRAMEWORK_CONFIG_TYPES.get(architecture)
    config_class = None
    if model_type is not None:
        config_class = resolve_custom_config_cls(model_type) or CONFIG_MAPPING.get(model_type)
    if config_class is None:  # the framework class's own config class, when it names one
        try:
            config_class = getattr(ModelRegistry.get_model_cls_from_model_arch(architecture), "config_class", None)
        except Exception as error:  # a model module that does not import here
            raise ModelBuildError(f"its module does not import: {type(error).__name__}: {error}") from error
        if config_class is None or config_class.__name__ in ("PretrainedConfig", "PreTrainedConfig"):
            raise ModelBuildError("no bundled config, and its class names no config class whose defaults could stand in")
        model_type = getattr(config_class, "model_type", "") or model_type
    try:
        config = config_class(**copy.deepcopy(dict(FRAMEWORK_CONFIG_KWARGS.get(model_type, {}))))
    except Exception as error:  # config classes validate with many exception types
        raise ModelBuildError(f"{config_class.__name__}() fails: {type(error).__name__}: {error}") from error
    config.architectures = [architecture]
    return config, f"defaults:{config_class.__name__}"


def build_framework_structure(architecture: str) -> tuple[ModelStructure, str]:
    """The framework's class for ``architecture``, built on meta as the framework builds it."""
    from mmfreeze.models.build import build_meta_model
    from mmfreeze.models.framework_build import resolve_framework_class

    config, where = framework_config(architecture)
    model_class = resolve_framework_class(config)
    if model_class is None:
        raise ModelBuildError(f"the framework builds the transformers class for this config ({where})")
    return structure_of(build_meta_model(config, model_class, constructor="framework")), where


def verify_framework_architecture(architecture: str) -> FrameworkResult:
    """Build, resolve and (for table classes) check one framework architecture."""
    try:
        structure, where = build_framework_structure(architecture)
    except MmfreezeError as error:
        return FrameworkResult(architecture=architecture, config="", problems=(f"cannot build on meta: {error}",))
    entry = ARCHITECTURE_TABLE.get(structure.class_name)
    try:
        with _HeuristicWarnings() as warnings:
            inventory = resolve_structure(structure)
    except MmfreezeError as error:
        return FrameworkResult(architecture=architecture, config=where, class_name=structure.class_name,
                               built=True, problems=(str(error),))
    modules = tuple((m.spec.path, m.spec.modality, m.spec.role) for m in inventory.modules)
    problems = [*check_inventory(structure, entry, inventory), *warnings.messages] if entry is not None else []
    if entry is None and modules:
        problems.append("multimodal, but not in the architecture table (resolved by the heuristic)")
    return FrameworkResult(architecture=architecture, config=where, class_name=structure.class_name,
                           modules=modules, problems=tuple(problems), built=True)
