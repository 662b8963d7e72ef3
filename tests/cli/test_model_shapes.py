"""Issue 23, item 1: every model shape the framework builds is built as the framework builds it,
or refused with one message that says what would make it buildable.

- A checkpoint transformers has no class for, behind a CausalLM target (MuseGlimmer): the class
  the framework's own ``_resolve_custom_model_cls_for_config`` picks, for that recipe alone.
- A custom-code checkpoint with no framework class, or a framework class whose config only the
  checkpoint's code makes (Nemotron-Omni): one input error, naming the code and what is missing.
- A composite (``Gemma4WithDrafter``): a section the framework would misread or reject is an input
  error (its frozen set against the framework's: ``tests/framework/test_composite.py``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from mmfreeze.disk_cache import default_cache_dir
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.cache import StructureCache
from mmfreeze.exceptions import ModelBuildError
from mmfreeze.models.framework import BuilderChoice, choose_builder
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.composite import GEMMA4_WITH_DRAFTER
from mmfreeze.recipes.recipe import load_recipe
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT

MUSE_GLIMMER = EXAMPLE_CONFIGS / "vlm_finetune/muse_glimmer/muse_glimmer_30b_medpix.yaml"
CUSTOM_CODE_CONFIG = {
    "model_type": "team_omni", "architectures": ["TeamOmniForCausalLM"], "hidden_size": 64,
    "auto_map": {"AutoConfig": "configuration_team_omni.TeamOmniConfig",
                 "AutoModelForCausalLM": "modeling_team_omni.TeamOmniForCausalLM"},
}
NEMOTRON_OMNI_CONFIG = {
    "model_type": "NemotronH_Nano_Omni_Reasoning_V3", "architectures": ["NemotronH_Nano_Omni_Reasoning_V3"],
    "auto_map": {"AutoConfig": "configuration_nemotron_h.NemotronHOmniConfig",
                 "AutoModel": "modeling.NemotronH_Nano_Omni_Reasoning_V3"},
}
RECIPE = """\
model:
  _target_: {target}
  pretrained_model_name_or_path: {model_id}
  drafter_path: google/gemma-4-E2B-it-assistant
freeze_config:
  vision: {{tower: true}}
  language_model: false
"""


def explain(recipe: Path, *options: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["explain", str(recipe), *options], terminal_width=400)
    return result.exit_code, [line for line in result.output.splitlines() if line.strip()]


def write_recipe(folder: Path, *, target: str, model_id: str) -> Path:
    path = folder / "recipe.yaml"
    path.write_text(RECIPE.format(target=target, model_id=model_id), encoding="utf-8")
    return path


@pytest.mark.skipif(importlib.util.find_spec("nemo_automodel") is None, reason="nemo-automodel is not installed")
def test_a_checkpoint_transformers_has_no_class_for_builds_the_class_the_framework_picks_by_architectures() -> None:
    """MuseGlimmer behind NeMoAutoModelForCausalLM, under the run's own builder choice (in the main
    environment: auto, transformers 5.24 beside nemo-automodel 0.7.0)."""
    from nemo_automodel._transformers.model_init import _resolve_custom_model_cls_for_config

    from mmfreeze.models.framework_build import build_framework_config

    recipe = load_recipe(MUSE_GLIMMER, root=REPO_ROOT)
    # The run's shared cache: the corpus check builds this 30B model too, and it is built once.
    loaded = load_structure(model_request(recipe, choose_builder()), StructureCache(default_cache_dir()))
    picked = _resolve_custom_model_cls_for_config(build_framework_config(loaded.source.config))
    assert recipe.model.auto_class == "AutoModelForCausalLM"
    assert (loaded.structure.class_name, loaded.structure.class_module) == (picked.__name__, picked.__module__)
    choice = choose_builder()
    # Beside transformers 5.24 the framework's class stands in; under the framework's pin it is the framework's build.
    assert loaded.structure.built_by == ("" if choice.kind == "framework" else f"nemo-automodel {choice.stand_in}")


def test_without_the_framework_a_checkpoint_only_it_builds_is_an_error_naming_its_class() -> None:
    """The transformers builder on a machine without nemo-automodel: a choice with no stand-in, the
    one ``choose_builder`` makes there."""
    recipe = load_recipe(MUSE_GLIMMER, root=REPO_ROOT)
    without_framework = BuilderChoice(kind="transformers", reason="nemo-automodel is not installed")
    with pytest.raises(ModelBuildError) as raised:
        load_structure(model_request(recipe, without_framework), StructureCache(default_cache_dir()))
    assert (raised.value.source, raised.value.key) == (recipe.display_path, "model")
    assert raised.value.message.startswith("transformers ")
    assert ("has no class for model_type 'muse_glimmer' under AutoModelForCausalLM (architectures[0]: "
            "MuseGlimmerForConditionalGeneration); nemo-automodel builds its own MuseGlimmerForConditionalGeneration "
            "(nemo_automodel.components.models.muse_glimmer.model) for it. With nemo-automodel installed") in raised.value.message


def explain_configs_folder_model(tmp_path: Path, model_id: str, config: dict[str, object], target: str) -> list[str]:
    """``explain`` on a recipe whose model's config.json is in the repository's configs folder: the
    one line it prints, after checking that it is an input error."""
    folder = tmp_path / "configs" / model_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, lines = explain(write_recipe(tmp_path, target=target, model_id=model_id), "--configs", str(tmp_path / "configs"))
    assert code == ExitCode.INPUT_ERROR
    assert len(lines) == 1, lines
    return lines


def test_a_custom_code_checkpoint_is_one_input_error_naming_what_would_make_it_buildable(tmp_path: Path) -> None:
    lines = explain_configs_folder_model(tmp_path, "team-org/team-omni-7b", CUSTOM_CODE_CONFIG,
                                         "nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained")
    assert "has no class for model_type 'team_omni' under AutoModelForCausalLM" in lines[0]
    assert "nemo-automodel has no class for TeamOmniForCausalLM: it is a custom-code checkpoint" in lines[0]
    assert "AutoModelForCausalLM -> modeling_team_omni.TeamOmniForCausalLM" in lines[0]
    assert "mmfreeze never runs a checkpoint's code" in lines[0]
    assert "a config.json in the repository's configs folder whose model_type and architectures name a class" in lines[0]
    assert "or exclude the recipe ([tool.mmfreeze] exclude)" in lines[0]


@pytest.mark.skipif(importlib.util.find_spec("nemo_automodel") is None, reason="nemo-automodel is not installed")
def test_a_framework_class_whose_config_is_the_checkpoints_own_code_says_that_is_what_is_missing(tmp_path: Path) -> None:
    """Nemotron-Omni: nemo-automodel has a class for the architecture, but its loader makes the config
    with the checkpoint's own code (``AutoConfig.from_pretrained(..., trust_remote_code=True)``)."""
    lines = explain_configs_folder_model(tmp_path, "nvidia/nemotron-omni", NEMOTRON_OMNI_CONFIG,
                                         "nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained")
    assert ("model: nemo-automodel builds NemotronOmniForConditionalGeneration "
            "(nemo_automodel.components.models.nemotron_omni.model) for NemotronH_Nano_Omni_Reasoning_V3 from a config "
            "object that neither it nor transformers defines (model_type 'NemotronH_Nano_Omni_Reasoning_V3'): it is a "
            "custom-code checkpoint (config.json auto_map: AutoConfig -> configuration_nemotron_h.NemotronHOmniConfig, "
            "AutoModel -> modeling.NemotronH_Nano_Omni_Reasoning_V3), and mmfreeze never runs a checkpoint's code") in lines[0]


@pytest.mark.parametrize(("edit", "key", "message"), [
    ({"drafter_path": None}, "model.drafter_path", "Gemma4WithDrafter needs `drafter_path`"),
    ({"drafter_num_steps": 0}, "model.drafter_num_steps", "must be an integer >= 1"),
    ({"freeze_base_for_drafter": "yes"}, "model.freeze_base_for_drafter", "must be true or false, got 'yes'"),
    ({"peft": {"dim": 8}}, "peft", "Gemma4WithDrafter does not take LoRA"),
])
def test_a_composite_section_the_framework_would_misread_or_reject_is_an_input_error(
    tmp_path: Path, edit: dict[str, object], key: str, message: str
) -> None:
    """``bool("yes")`` is true in the framework's constructor, so a string would freeze the whole base."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    document = yaml.load(RECIPE.format(target=GEMMA4_WITH_DRAFTER, model_id="google/gemma-4-E2B-it"))
    for name, value in edit.items():
        if name == "peft":
            document["peft"] = value
        elif value is None:
            del document["model"][name]
        else:
            document["model"][name] = value
    path = tmp_path / "recipe.yaml"
    with path.open("w", encoding="utf-8") as stream:
        yaml.dump(document, stream)
    code, lines = explain(path)
    assert code == ExitCode.INPUT_ERROR
    assert len(lines) == 1, lines
    assert f": {key}: {message}" in lines[0]
