"""The richer new vocabulary on real models built on the meta device from the bundled registry:
a tower exception, layer ranges checked against the real depth, globs; each error names its key
with a did-you-mean; exceptions never unfreeze what was frozen before the section or by invariants."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from mmfreeze.exceptions import FreezeConfigError, ModelBuildError
from mmfreeze.freeze import apply_freeze_config
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.new import plan_new_freeze
from mmfreeze.freeze.plan import frozen_after
from mmfreeze.recipes.targets import AUTO_CLASSES
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.models.loader import build_model, build_structure
from mmfreeze.models.structure import ModelStructure

QWEN2_VL = "Qwen/Qwen2-VL-2B-Instruct"
LLAVA = "llava-hf/llava-1.5-7b-hf"
GEMMA3 = "google/gemma-3-4b-it"
GEMMA4_E2B = "google/gemma-4-E2B-it"
QWEN2_AUDIO = "Qwen/Qwen2-Audio-7B-Instruct"
MLLAMA = "meta-llama/Llama-3.2-11B-Vision-Instruct"


@cache
def config_and_class(model_id: str) -> tuple[dict, str]:
    """The registry config and the first Auto class that builds it (as call-site bindings do)."""
    config = find_model_config(model_id, recipe_dir=Path("."), allow_network=False, source=model_id).config
    for auto_class in AUTO_CLASSES:
        try:
            build_structure(config, auto_class, source=model_id)
        except ModelBuildError:
            continue
        return dict(config), auto_class
    raise AssertionError(f"{model_id}: no Auto class builds it")


@cache
def structure(model_id: str) -> ModelStructure:
    config, auto_class = config_and_class(model_id)
    return build_structure(config, auto_class, source=model_id)


def frozen(model_id: str, section: dict) -> frozenset[str]:
    """The recipe pipeline's frozen set for a recipe with only this `freeze_config` (invariants included)."""
    return compute_frozen_set(structure(model_id), {"freeze_config": section}, source="r.yaml", override_specs=()).frozen


def names(model_id: str, pattern: str) -> set[str]:
    return {info.name for info in structure(model_id).parameters if re.fullmatch(pattern, info.name)}


def raises(model_id: str, section: dict, match: str) -> FreezeConfigError:
    with pytest.raises(FreezeConfigError, match=match) as caught:
        plan_new_freeze(structure(model_id), section, source="r.yaml")
    return caught.value


# --- a tower exception ---------------------------------------------------------------------------------------------

def test_a_frozen_tower_keeps_its_last_four_blocks_trainable() -> None:
    result = frozen(QWEN2_VL, {"vision": {"tower": True, "projector": True}, "except": [{"layers": "vision.tower", "last": 4}]})
    trainable_blocks = names(QWEN2_VL, r"model\.visual\.blocks\.(28|29|30|31)\..*")
    assert trainable_blocks and not trainable_blocks & result
    assert names(QWEN2_VL, r"model\.visual\.(blocks\.([0-9]|1[0-9]|2[0-7])|merger|patch_embed)\..*") <= result
    assert not names(QWEN2_VL, r"model\.language_model\..*") & result


def test_a_frozen_tower_keeps_its_merger_trainable_when_both_are_selected_by_path() -> None:
    result = frozen(QWEN2_VL, {"modules": ["model.visual"], "except": ["model.visual.merger"]})
    assert not names(QWEN2_VL, r"model\.visual\.merger\..*") & result
    assert names(QWEN2_VL, r"model\.visual\.blocks\..*") <= result


def test_an_exception_outside_what_the_section_freezes_is_an_error_that_says_why() -> None:
    error = raises(QWEN2_VL, {"vision": {"tower": True}, "except": ["model.visual.merger"]}, "keeps nothing trainable")
    assert error.key == "freeze_config.except[0]" and "nothing it selects is frozen by this section" in error.message


def test_a_misspelt_layer_group_in_an_exception_suggests_the_real_one() -> None:
    error = raises(QWEN2_VL, {"vision": {"tower": True}, "except": [{"layers": "vision.towr", "last": 4}]},
                   r"no layer stack 'vision.towr' \(did you mean 'vision.tower'\?\)")
    assert error.key == "freeze_config.except[0]"
    assert "vision.tower (model.visual.blocks, 32 layers)" in error.message


# --- layer ranges ----------------------------------------------------------------------------------------------------

def test_first_n_layers_of_the_language_model() -> None:
    result = frozen(LLAVA, {"modules": [{"layers": "language_model", "first": 20}]})
    assert result == names(LLAVA, r"model\.language_model\.layers\.([0-9]|1[0-9])\..*")


def test_an_explicit_range_is_inclusive_and_last_n_counts_from_the_top() -> None:
    middle = frozen(LLAVA, {"modules": [{"layers": "language_model", "from": 10, "to": 15}]})
    assert middle == names(LLAVA, r"model\.language_model\.layers\.1[0-5]\..*")
    top = frozen(LLAVA, {"modules": [{"layers": "language_model", "last": 2}]})
    assert top == names(LLAVA, r"model\.language_model\.layers\.3[01]\..*")


def test_a_range_past_the_real_depth_names_the_depth() -> None:
    error = raises(LLAVA, {"modules": [{"layers": "language_model", "first": 40}]},
                   r"first: 40 exceeds the depth of language_model \(model.language_model.layers, 32 layers\)")
    assert error.key == "freeze_config.modules[0]"
    raises(LLAVA, {"modules": [{"layers": "language_model", "from": 30, "to": 32}]}, r"to: 32 is past the last layer .* \(layers 0-31\)")


def test_a_misspelt_layer_group_suggests_the_real_one() -> None:
    raises(LLAVA, {"modules": [{"layers": "language_modle", "first": 2}]}, r"did you mean 'language_model'\?")


def test_a_group_holding_two_stacks_must_be_named_by_path() -> None:
    raises(MLLAMA, {"modules": [{"layers": "vision.tower", "first": 2}]}, r"holds 2 layer stacks .*name one by its path")
    result = frozen(MLLAMA, {"modules": [{"layers": "model.vision_model.global_transformer.layers", "last": 1}]})
    assert result == names(MLLAMA, r"model\.vision_model\.global_transformer\.layers\.7\..*")


# --- globs -----------------------------------------------------------------------------------------------------------

def test_a_glob_freezes_the_same_submodule_of_every_layer() -> None:
    result = frozen(GEMMA3, {"modules": [{"glob": "model.language_model.layers.*.self_attn"}]})
    assert result == names(GEMMA3, r"model\.language_model\.layers\.\d+\.self_attn\..*")
    assert not names(GEMMA3, r".*\.mlp\..*") & result


def test_a_glob_matching_nothing_suggests_the_glob_over_the_nearest_path() -> None:
    error = raises(GEMMA3, {"modules": [{"glob": "model.language_model.layer.*.self_attn"}]},
                   r"matches no module of this model \(did you mean 'model.language_model.layers.\*.self_attn'\?\)")
    assert error.key == "freeze_config.modules[0]"


# --- what exceptions never make trainable ----------------------------------------------------------------------------

def test_an_exception_never_unfreezes_a_parameter_the_model_built_frozen() -> None:
    built_frozen = {info.name for info in structure(QWEN2_AUDIO).parameters if not info.requires_grad}
    assert built_frozen == {"model.audio_tower.embed_positions.weight"}
    assert frozen(QWEN2_AUDIO, {"audio": {"tower": True}, "except": ["model.audio_tower"]}) == built_frozen
    raises(QWEN2_AUDIO, {"audio": {"tower": True}, "except": ["model.audio_tower.embed_positions"]},
           "keeps nothing trainable: .*stay frozen anyway: frozen before the section runs")


def test_an_exception_never_unfreezes_what_the_frameworks_invariants_freeze() -> None:
    """Gemma4 E2B shares K/V in decoder layers 15-34; the framework's invariant freezes K/V parameters by
    layer index, which on transformers 5.24 hits the vision encoder's layer 15."""
    result = frozen(GEMMA4_E2B, {"vision": {"tower": True}, "except": [{"layers": "vision.tower", "last": 1}]})
    dead_kv = names(GEMMA4_E2B, r"model\.vision_tower\.encoder\.layers\.15\.self_attn\.(k_proj|v_proj|k_norm|v_norm)\..*")
    live = names(GEMMA4_E2B, r"model\.vision_tower\.encoder\.layers\.15\..*") - dead_kv
    assert dead_kv and dead_kv <= result and live and not live & result
    raises(GEMMA4_E2B, {"vision": {"tower": True}, "except": ["model.vision_tower.encoder.layers.15.self_attn.k_proj"]},
           "keeps nothing trainable: .*invariant: K/V of KV-shared layers")


def test_the_runtime_applies_exceptions_on_a_live_meta_model() -> None:
    config, auto_class = config_and_class(QWEN2_VL)
    model = build_model(config, auto_class, source=QWEN2_VL)
    section = {"vision": {"tower": True, "projector": True}, "except": [{"layers": "vision.tower", "last": 4}]}
    result = apply_freeze_config(model, section)
    assert result.frozen == {name for name, p in model.named_parameters() if not p.requires_grad}
    assert result.frozen == frozen(QWEN2_VL, section)
    assert frozen_after(structure(QWEN2_VL), plan_new_freeze(structure(QWEN2_VL), section)) == result.frozen


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migration.md"
WORKED_EXAMPLE = re.compile(r"```yaml\n# on (?P<model>\S+), trainable: (?P<kept>[^\n]+)\n(?P<body>.*?)```", re.S)


def test_the_guides_worked_examples_hold() -> None:
    """docs/migration.md: each worked exception keeps exactly the modules its header names trainable."""
    examples = WORKED_EXAMPLE.findall(GUIDE.read_text())
    assert len(examples) == 3
    for model_id, kept, body in examples:
        section = YAML(typ="safe").load(body)["freeze_config"]
        without_exceptions = {key: value for key, value in section.items() if key != "except"}
        kept_trainable = frozen(model_id, without_exceptions) - frozen(model_id, section)
        patterns = [pattern + ".*" for pattern in kept.split(", ")]
        expected = {info.name for info in structure(model_id).parameters if any(fnmatchcase(info.name, p) for p in patterns)}
        assert expected and kept_trainable == expected, model_id
