"""Issue 23: a ``Gemma4WithDrafter`` recipe trains what the framework trains, for every constructor
argument that changes it.

The framework's side is its own: each part through ``_apply_trainability_policy`` as
``from_pretrained`` loads it (the recipe's `freeze_config` on the base, none on the drafter), then
its ``Gemma4WithDrafter`` constructor over the parts (``tests/framework/oracle.py``). mmfreeze's
side is the snapshot's: the recipe read, the composite built, the engine.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from mmfreeze.disk_cache import default_cache_dir
from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.framework import choose_builder
from mmfreeze.models.loader import build_requested_model, find_config, load_structure
from mmfreeze.recipes.composite import GEMMA4_WITH_DRAFTER
from mmfreeze.recipes.recipe import load_recipe
from tests.framework.oracle import framework_trainability

pytestmark = pytest.mark.slow  # builds Gemma 4 E2B and its drafter once per argument set

SECTIONS = {
    "legacy flags": {"freeze_vision_tower": True, "freeze_audio_tower": True, "freeze_language_model": False},
    "selectors": {"freeze_modules": [{"path": "model.vision_tower"}, {"glob": "model.language_model.layers.1*"}],
                  "unfreeze_modules": [{"path": "model.language_model.layers.12"}]},
}
ARGUMENTS = {
    "one step": {"drafter_num_steps": 1},
    "four steps": {"drafter_num_steps": 4},
    "base frozen": {"freeze_base_for_drafter": True},
}


def write_recipe(folder: Path, arguments: dict[str, Any], section: dict[str, Any]) -> Path:
    document = {"model": {"_target_": GEMMA4_WITH_DRAFTER, "pretrained_model_name_or_path": "google/gemma-4-E2B-it",
                          "drafter_path": "google/gemma-4-E2B-it-assistant", **arguments},
                "freeze_config": section}
    path = folder / "recipe.yaml"
    with path.open("w", encoding="utf-8") as stream:
        YAML(typ="safe", pure=True).dump(document, stream)
    return path


@pytest.mark.parametrize("section", SECTIONS, ids=str)
@pytest.mark.parametrize("arguments", ARGUMENTS, ids=str)
def test_a_composite_recipe_freezes_what_the_framework_freezes(tmp_path: Path, arguments: str, section: str) -> None:
    recipe = load_recipe(write_recipe(tmp_path, ARGUMENTS[arguments], SECTIONS[section]))
    request = model_request(recipe, choose_builder())
    model = copy.deepcopy(build_requested_model(request, find_config(request)))
    frozen, _ = framework_trainability(model, SECTIONS[section], None, recipe.model.drafter)
    computed = recipe_frozen_set(recipe, load_structure(request, StructureCache(default_cache_dir())).structure)
    assert computed.frozen == frozen, (f"frozen only by the framework: {sorted(frozen - computed.frozen)[:5]}; "
                                       f"only by mmfreeze: {sorted(computed.frozen - frozen)[:5]}")
    assert any(name.startswith("drafter.") for name in computed.structure.parameters_by_name)


def test_parts_the_composite_rejects_are_an_input_error_naming_the_drafter(tmp_path: Path) -> None:
    """``share_embedding_with_base`` copies the base's embedding into the drafter's, so their shapes
    must agree; the bundled drafter config (transformers' defaults, 2304 wide) does not."""
    from mmfreeze.exceptions import ModelBuildError

    recipe = load_recipe(write_recipe(tmp_path, {"share_embedding_with_base": True}, SECTIONS["legacy flags"]))
    with pytest.raises(ModelBuildError) as raised:
        load_structure(model_request(recipe, choose_builder()), StructureCache(tmp_path / "cache"))
    assert (raised.value.source, raised.value.key) == (recipe.display_path, "model")
    assert raised.value.message == (
        "nemo-automodel's Gemma4WithDrafter rejects these parts (google/gemma-4-E2B-it-assistant as the drafter): "
        "ValueError: share_embedding_with_base=True but base embed_tokens shape (262144, 1536) != drafter "
        "embed_tokens shape (262144, 2304). The two models must share a vocabulary.")


def test_without_the_framework_a_composite_is_an_environment_error_before_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mock: nemo-automodel cannot be uninstalled from the environment under test."""
    from mmfreeze.exceptions import EnvironmentBuildError
    from mmfreeze.models import composite

    monkeypatch.setattr(composite, "installed_version", lambda name: "missing")
    recipe = load_recipe(write_recipe(tmp_path, {}, SECTIONS["legacy flags"]))
    with pytest.raises(EnvironmentBuildError) as raised:
        load_structure(model_request(recipe, choose_builder()), StructureCache(tmp_path / "cache"))
    assert (raised.value.source, raised.value.key) == (recipe.display_path, "model._target_")
    assert raised.value.message == ("Gemma4WithDrafter is nemo-automodel's own class, and mmfreeze builds it with it: "
                                    "install it (pip install --no-deps nemo-automodel)")


def test_a_drafter_without_a_config_names_the_drafter_key(tmp_path: Path) -> None:
    from mmfreeze.exceptions import MissingModelConfigError

    recipe = load_recipe(write_recipe(tmp_path, {"drafter_path": "google/gemma-4-E9B-it-assistant"}, {}))
    with pytest.raises(MissingModelConfigError) as raised:
        load_structure(model_request(recipe, choose_builder()), StructureCache(tmp_path / "cache"))
    assert (raised.value.key, raised.value.model_id) == ("model.drafter_path", "google/gemma-4-E9B-it-assistant")
