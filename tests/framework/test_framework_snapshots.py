"""Issue #16 (a): where the framework is installed with its transformers, a snapshot describes the
model the framework builds. The bundled Qwen3.5 and Omni recipes, through mmfreeze's real snapshot
computation with builder ``auto`` (and ``framework``), list exactly the parameter names of the
framework's own class, built here on meta straight from nemo-automodel (not through mmfreeze).

The two Omni recipes whose model the framework builds (``NeMoAutoModelForMultimodalLM``) name no
audio ``generator``: the framework's thinker-only model has none, so a recipe naming it is an input
error under the framework's builder (what the recipe says does not fit the model that trains).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from mmfreeze.disk_cache import default_cache_dir
from mmfreeze.exceptions import MmfreezeError
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.models.framework import choose_builder
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.settings import default_settings
from mmfreeze.snapshots.compute import compute_snapshot
from mmfreeze.snapshots.frozen_cache import FrozenSetCache
from mmfreeze.versions import installed_version
from mmfreeze.workspace import Workspace
from tests.conftest import REPO_ROOT

pytestmark = [
    pytest.mark.framework,
    pytest.mark.skipif(choose_builder("auto").kind != "framework",
                       reason="needs nemo-automodel with the transformers it requires (.venv-framework)"),
]

QWEN3_5 = {
    "example_configs/vlm_finetune/qwen3_5/qwen3_5_9b_cord_v2.yaml": "Qwen3_5ForConditionalGeneration",
    "example_configs/vlm_finetune/qwen3_5_moe/qwen3_5_35b_a3b_cauldron.yaml": "Qwen3_5MoeForConditionalGeneration",
    "example_configs/vlm_peft/qwen3_5_moe/qwen3_5_35b_a3b_lora_medpix.yaml": "Qwen3_5MoeForConditionalGeneration",
}
OMNI = {
    "example_configs/audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_librispeech.yaml": "Qwen2_5OmniThinkerForConditionalGeneration",
    "example_configs/audio_finetune/qwen3_omni_moe/qwen3_omni_30b_a3b_common_voice_ep.yaml": "Qwen3OmniMoeThinkerForConditionalGeneration",
}


def framework_parameter_names(model_id: str) -> tuple[str, set[str]]:
    """The framework's own class for ``model_id``'s bundled config, built on meta by nemo-automodel's
    own functions, and its parameter names (every name, tied aliases included)."""
    import torch
    from nemo_automodel._transformers.model_init import _resolve_custom_model_cls_for_config
    from nemo_automodel._transformers.registry import resolve_custom_config_cls
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config_json = copy.deepcopy(dict(find_model_config(model_id).config))
    config_class = resolve_custom_config_cls(config_json["model_type"]) or CONFIG_MAPPING[config_json["model_type"]]
    config = config_class.from_dict(config_json)
    model_class = _resolve_custom_model_cls_for_config(config)
    with torch.device("meta"):
        model = model_class(config)
    return model_class.__name__, {name for name, _ in model.named_parameters(remove_duplicate=False)}


def options(builder: str) -> Workspace:
    """A workspace on the run's cache: the models the rest of the run builds are not built again."""
    return Workspace(settings=default_settings(REPO_ROOT), builder=choose_builder(builder),
                     structures=StructureCache(default_cache_dir()), documents=YamlDocuments(REPO_ROOT))


def check_snapshot_is_the_frameworks(recipe: Path, key: str, expected_class: str, workspace: Workspace) -> None:
    snapshot = compute_snapshot(recipe, key, workspace, FrozenSetCache(workspace.structures.directory))
    header = snapshot.header
    class_name, names = framework_parameter_names(workspace.recipe(recipe).model.model_id)
    assert class_name == expected_class
    assert header.architecture == expected_class
    assert header.builder == f"nemo-automodel {installed_version('nemo-automodel')}"
    assert header.divergence == ""
    trained = workspace.frozen_set(workspace.recipe(recipe)).structure
    base = {name for info in trained.parameters for name in info.names if ".lora_" not in name}
    assert base == names
    assert snapshot.frozen <= {name for info in trained.parameters for name in info.names}
    assert header.frozen_tensors + header.trainable_tensors == len(trained.parameters)


@pytest.mark.parametrize("builder", ["auto", "framework"])
@pytest.mark.parametrize("recipe", sorted(QWEN3_5))
def test_qwen3_5_snapshot_lists_the_framework_class_parameters(recipe: str, builder: str) -> None:
    check_snapshot_is_the_frameworks(REPO_ROOT / recipe, recipe, QWEN3_5[recipe], options(builder))


def test_qwen3_5_framework_names_differ_from_transformers_ones_where_the_issue_says() -> None:
    """The framework's Qwen3.5 keeps its linear-attention fp32 parameters under ``_fp32_params``."""
    _, names = framework_parameter_names("Qwen/Qwen3.5-9B")
    assert any("linear_attn._fp32_params." in name for name in names)


@pytest.mark.parametrize("recipe", sorted(OMNI))
def test_omni_snapshot_lists_the_thinker_parameters(recipe: str) -> None:
    """No talker, no code2wav: the thinker the framework builds."""
    workspace = options("auto")
    check_snapshot_is_the_frameworks(REPO_ROOT / recipe, recipe, OMNI[recipe], workspace)
    structure = workspace.frozen_set(workspace.recipe(REPO_ROOT / recipe)).structure
    assert not any(name.startswith(("talker.", "token2wav.", "code2wav.")) for name in structure.parameters_by_name)


@pytest.mark.parametrize("recipe", sorted(OMNI))
def test_omni_recipe_naming_a_generator_is_an_input_error_under_the_framework(recipe: str, tmp_path: Path) -> None:
    source = REPO_ROOT / recipe
    copied = tmp_path / "recipes" / source.name
    copied.parent.mkdir()
    text = source.read_text(encoding="utf-8")
    named = re.sub(r"(\n +audio: \{[^}]*)\}", r"\1, generator: false}", text, count=1)  # the source, under `mmfreeze:`
    assert named != text
    copied.write_text(named, encoding="utf-8")
    with pytest.raises(MmfreezeError, match="no role 'generator'"):
        workspace = options("auto")
        compute_snapshot(copied, recipe, workspace, FrozenSetCache(workspace.structures.directory))
