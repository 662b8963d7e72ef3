from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.recipe import load_recipe

IMAGE_TEXT = "nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained"


def write(tmp_path: Path, text: str, name: str = "recipe.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_model_section_maps_target_to_auto_class_without_importing_it(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, f"model:\n  _target_: {IMAGE_TEXT}\n  pretrained_model_name_or_path: org/m\n"))
    assert recipe.model.auto_class == "AutoModelForImageTextToText"
    assert recipe.model.model_id == "org/m"


def test_absent_freeze_config_differs_from_empty_section(tmp_path: Path) -> None:
    base = f"model:\n  _target_: {IMAGE_TEXT}\n  pretrained_model_name_or_path: org/m\n"
    absent = load_recipe(write(tmp_path, base, "a.yaml"))
    empty = load_recipe(write(tmp_path, base + "freeze_config: {}\n", "b.yaml"))
    assert (absent.freeze_config, empty.freeze_config) == (None, {})


def test_anchors_and_merge_keys_are_resolved(tmp_path: Path) -> None:
    text = (
        f"defaults: &defaults\n  _target_: {IMAGE_TEXT}\n  pretrained_model_name_or_path: org/m\n"
        "model:\n  <<: *defaults\n"
    )
    assert load_recipe(write(tmp_path, text)).model.model_id == "org/m"


def test_runtime_resolver_in_model_id_is_reported_not_guessed(tmp_path: Path) -> None:
    text = f"model:\n  _target_: {IMAGE_TEXT}\n  pretrained_model_name_or_path: ${{oc.env:MODEL}}\n"
    with pytest.raises(RecipeError, match="cannot be resolved offline") as caught:
        load_recipe(write(tmp_path, text))
    assert caught.value.key == "model.pretrained_model_name_or_path"


@pytest.mark.parametrize("reference", ["${MODEL_ID,org/m}", "${oc.env:MODEL_ID,org/m}", "${ MODEL_ID , org/m }"])
def test_an_environment_reference_with_a_default_reads_as_its_default(tmp_path: Path, reference: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """nemo-automodel 0.7 reads `${VAR,default}` from the environment; a snapshot must not depend on
    the machine, so mmfreeze reads what a run without the variable trains, whatever this one has."""
    monkeypatch.setenv("MODEL_ID", "org/other")
    text = f"model:\n  _target_: {IMAGE_TEXT}\n  pretrained_model_name_or_path: '{reference}'\n"
    assert load_recipe(write(tmp_path, text)).model.model_id == "org/m"


def test_a_recipe_key_reference_is_an_environment_variable_for_the_framework(tmp_path: Path) -> None:
    """0.7's loader has no OmegaConf key interpolation: `${model_name}` is the environment variable
    model_name, so reading the recipe key instead would describe a model the framework never trains."""
    text = f"model_name: org/m\nmodel:\n  _target_: {IMAGE_TEXT}\n  pretrained_model_name_or_path: ${{model_name}}\n"
    with pytest.raises(RecipeError, match="is the environment variable 'model_name' for nemo-automodel 0.7") as caught:
        load_recipe(write(tmp_path, text))
    assert caught.value.key == "model.pretrained_model_name_or_path"
    assert "give a default: `${model_name,<value>}`" in caught.value.message


def test_unknown_target_is_rejected_with_the_allowlist(tmp_path: Path) -> None:
    text = "model:\n  _target_: os.system\n  pretrained_model_name_or_path: org/m\n"
    with pytest.raises(RecipeError, match="not in the allowlist") as caught:
        load_recipe(write(tmp_path, text))
    assert "recipe.yaml" in str(caught.value) and "model._target_" in str(caught.value)


def test_extra_allowed_target_is_accepted(tmp_path: Path) -> None:
    text = "model:\n  _target_: team.MyVLM.from_pretrained\n  pretrained_model_name_or_path: org/m\n"
    recipe = load_recipe(write(tmp_path, text), allowed_targets={"team.MyVLM.from_pretrained": "AutoModelForImageTextToText"})
    assert recipe.model.auto_class == "AutoModelForImageTextToText"


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "model:\n  _target_: x\n  bad: [unclosed\n")
    with pytest.raises(RecipeError, match=r"recipe\.yaml:\d+: YAML does not parse"):
        load_recipe(path)


def test_recipe_without_model_section_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="no `model:` section"):
        load_recipe(write(tmp_path, "optimizer: {lr: 1.0e-5}\n"))


def test_duplicate_keys_are_an_error_not_a_silent_override(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="YAML does not parse"):
        load_recipe(write(tmp_path, "model: {}\nmodel: {}\n"))
