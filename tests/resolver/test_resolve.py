"""Resolution rules on pure structures: precedence, overrides, aliases, parent/child, errors."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from mmfreeze.exceptions import ResolverError
from mmfreeze.models.structure import ModelStructure, ParameterInfo, structure_of
from mmfreeze.resolver import (
    ArchitectureEntry,
    LanguagePart,
    ModuleDecl,
    MultimodalModuleSpec,
    resolve_multimodal_modules,
    resolve_structure,
)


def make_structure(class_name, modules, parameters, aliases=None):
    return ModelStructure(
        class_name=class_name,
        modules={"": class_name, **modules},
        module_aliases=aliases or {},
        parameters=tuple(ParameterInfo(name=n, shape=(2,), requires_grad=True, aliases=a) for n, a in parameters),
    )


def paths(inventory):
    return [(m.spec.path, m.spec.modality, m.spec.role, m.source) for m in inventory.modules]


def test_qwen_merger_projector_survives_inside_its_tower_with_disjoint_parameters(qwen2_vl):
    inventory = resolve_structure(structure_of(qwen2_vl))
    tower, merger = inventory.modules
    assert (tower.spec.path, merger.spec.path) == ("model.visual", "model.visual.merger")
    assert set(tower.parameters).isdisjoint(merger.parameters)
    assert all(name.startswith("model.visual.merger.") for name in merger.parameters)


def test_child_with_the_same_role_as_its_parent_is_dropped(llava):
    override = MultimodalModuleSpec(path="model.vision_tower.encoder", modality="vision", role="tower")
    inventory = resolve_structure(structure_of(llava), override_specs=[override])
    assert [m.spec.path for m in inventory.modules] == ["model.vision_tower", "model.multi_modal_projector"]


def test_override_wins_for_the_same_path_and_corrects_metadata(llava):
    override = MultimodalModuleSpec(
        path="model.multi_modal_projector", modality="vision", role="adapter", conditionally_executed=False
    )
    inventory = resolve_structure(structure_of(llava), override_specs=[override])
    projector = inventory.modules[1]
    assert (projector.spec, projector.source) == (override, "override")
    assert inventory.modules[0].source == "table"


def test_override_for_an_unknown_path_names_the_closest_paths(llava):
    misspelt = MultimodalModuleSpec(path="model.multimodal_projector", modality="vision")
    with pytest.raises(ResolverError, match="model.multi_modal_projector") as error:
        resolve_structure(structure_of(llava), override_specs=[misspelt])
    assert "closest existing paths" in str(error.value)


def test_two_overrides_for_one_path_are_an_error(llava):
    spec = MultimodalModuleSpec(path="model.vision_tower", modality="vision", role="tower")
    with pytest.raises(ResolverError, match="two overrides"):
        resolve_structure(structure_of(llava), override_specs=[spec, spec])


def test_caller_declared_specs_replace_the_inventory(llava):
    declared = [MultimodalModuleSpec(path="model.vision_tower", modality="vision", role="tower")]
    inventory = resolve_structure(structure_of(llava), declared_specs=declared)
    assert paths(inventory) == [("model.vision_tower", "vision", "tower", "caller")]
    assert inventory.language_model.parts["decoder"] == "model.language_model"


def test_class_declaration_wins_over_the_table(llava):
    entry = ArchitectureEntry(
        modules=(ModuleDecl(paths=("model.vision_tower",), modality="vision", role="encoder"),),
        language_model=(LanguagePart(paths=("model.language_model",), part="decoder"),),
    )
    type(llava).mmfreeze_architecture = entry
    try:
        resolved = resolve_multimodal_modules(llava)
    finally:
        del type(llava).mmfreeze_architecture
    assert [(r.spec.role, r.source) for r in resolved] == [("encoder", "class")]


def test_alias_of_the_same_module_is_counted_once():
    structure = make_structure(
        "AliasedVLM",
        {"tower": "Encoder", "tower.proj": "Linear", "encoder": "Encoder", "lm": "Decoder"},
        [("tower.proj.weight", ("encoder.proj.weight",)), ("lm.weight", ())],
        aliases={"encoder": "tower"},
    )
    entry = ArchitectureEntry(
        modules=(
            ModuleDecl(paths=("tower",), modality="vision", role="tower"),
            ModuleDecl(paths=("encoder",), modality="vision", role="tower"),
        ),
        language_model=(LanguagePart(paths=("lm",), part="decoder"),),
    )
    inventory = resolve_structure(structure, table={"AliasedVLM": entry})
    assert paths(inventory) == [("tower", "vision", "tower", "table")]
    assert inventory.modules[0].numel == 2
    assert inventory.unowned == ()


def test_alternative_paths_use_the_first_that_exists():
    structure = make_structure("V", {"visual": "Encoder", "lm": "Decoder"}, [("visual.w", ()), ("lm.w", ())])
    entry = ArchitectureEntry(
        modules=(ModuleDecl(paths=("model.visual", "visual"), modality="vision", role="tower"),),
        language_model=(LanguagePart(paths=("lm",), part="decoder"),),
    )
    assert paths(resolve_structure(structure, table={"V": entry}))[0][0] == "visual"


def test_tied_lm_head_is_read_from_the_structure():
    structure = make_structure(
        "T",
        {"lm": "Decoder", "lm.embed": "Embedding", "lm_head": "Linear"},
        [("lm.embed.weight", ("lm_head.weight",))],
    )
    entry = ArchitectureEntry(
        modules=(),
        language_model=(
            LanguagePart(paths=("lm",), part="decoder"),
            LanguagePart(paths=("lm.embed",), part="embeddings"),
            LanguagePart(paths=("lm_head",), part="lm_head"),
        ),
    )
    language = resolve_structure(structure, table={"T": entry}).language_model
    assert language.tied_lm_head
    assert language.parameters == ("lm.embed.weight",)


def test_model_without_multimodal_modules_resolves_to_nothing():
    structure = make_structure("TextOnly", {"model": "Decoder", "lm_head": "Linear"}, [("model.w", ())])
    assert resolve_structure(structure).modules == ()


def test_heuristic_warns_once_per_class_and_names_its_guesses(caplog):
    structure = make_structure(
        "UnknownVLM",
        {"vision_tower": "Encoder", "multi_modal_projector": "Linear", "language_model": "Decoder"},
        [("vision_tower.w", ()), ("multi_modal_projector.w", ()), ("language_model.w", ())],
    )
    with caplog.at_level(logging.WARNING, logger="mmfreeze.resolver.heuristic"):
        first = resolve_structure(structure)
        resolve_structure(structure)
    assert paths(first) == [
        ("vision_tower", "vision", "tower", "heuristic"),
        ("multi_modal_projector", "vision", "projector", "heuristic"),
    ]
    assert len(caplog.records) == 1
    assert "UnknownVLM" in caplog.text and "vision_tower (vision/tower)" in caplog.text


def test_pure_resolution_imports_neither_torch_nor_transformers():
    code = (
        "import sys; from mmfreeze.resolver.resolve import resolve_structure; "
        "from mmfreeze.resolver.table import ARCHITECTURE_TABLE; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
