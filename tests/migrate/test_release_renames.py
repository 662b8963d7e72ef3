"""Issue 24, item 3: selectors written for transformers 5.18 paths, migrated under 5.24 (rule MF004).

`fixtures/release_renames/qwen2_5_omni_7b_towers_frozen.yaml` freezes the Qwen2.5-Omni thinker's
towers by their 5.18 paths (``thinker.visual``, ``thinker.audio_tower``); 5.24 nests them under
``thinker.model``. The migrated selectors name 5.24's paths, and nemo-automodel's own
``_apply_trainability_policy`` (strict) freezes with them, on the 5.24 model, exactly what it
freezes with the original selectors on the same parameters mounted at their 5.18 (checkpoint)
names.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML
from torch import nn

from mmfreeze.cli.main import cli
from mmfreeze.freeze.release_renames import moved_selectors
from mmfreeze.models.conversion import checkpoint_renames
from mmfreeze.models.renames import Renames
from mmfreeze.versions import installed_version
from tests.conftest import MAIN_TRANSFORMERS
from tests.nemo.framework_pipeline import fresh_model

pytestmark = [
    pytest.mark.slow,  # builds the 7B Qwen2.5-Omni (thinker, talker, token2wav) on meta, and runs the framework on it
    pytest.mark.skipif(installed_version("transformers") != MAIN_TRANSFORMERS,
                       reason=f"the fixture names 5.18 paths, which transformers {MAIN_TRANSFORMERS} renamed"),
]

FIXTURE = Path(__file__).parent / "fixtures" / "release_renames" / "qwen2_5_omni_7b_towers_frozen.yaml"


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    shutil.copy(FIXTURE, tmp_path / FIXTURE.name)
    return tmp_path / FIXTURE.name


def migrate(*args: str) -> Any:
    return CliRunner().invoke(cli, ["migrate", *args])


def freeze_config(path: Path) -> dict[str, Any]:
    return YAML(typ="safe", pure=True).load(path.read_text())["freeze_config"]


def mounted_at_checkpoint_names(model: nn.Module, renames: Renames) -> nn.Module:
    """The same modules (leaves: Linear, Embedding, ...) and parameters in a tree named as the
    checkpoint, and 5.18, name them; containers are plain modules."""
    root = nn.Module()

    def container(path: list[str]) -> nn.Module:
        module = root
        for part in path:
            if part not in module._modules:
                module.add_module(part, nn.Module())
            module = module._modules[part]
        return module

    for path, module in model.named_modules():
        if not path:
            continue
        *parent, leaf = renames.to_checkpoint(path).split(".")
        if not module._modules:
            container(parent).add_module(leaf, module)
        else:
            for name, parameter in module._parameters.items():
                container([*parent, leaf]).register_parameter(name, parameter)
    root.config = model.config
    return root


def test_selectors_written_for_5_18_paths_get_the_5_24_paths_proven_by_the_frameworks_function(recipe: Path) -> None:
    from tests.framework.oracle import framework_trainability

    original = freeze_config(recipe)
    result = migrate(str(recipe), "--disable", "MF001", "--report", "json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)["files"]
    assert report["status"] == "preserved" and report["rules"] == ["MF004"]
    assert report["notes"] == [
        "freeze_config.freeze_modules[0].path: thinker.visual -> thinker.model.visual (transformers' conversion mapping)",
        "freeze_config.freeze_modules[1].path: thinker.audio_tower -> thinker.model.audio_tower (transformers' conversion mapping)",
    ]
    text = recipe.read_text()
    assert "    - {path: thinker.model.visual}       # ViT and merger\n" in text  # in place: comments stay
    assert freeze_config(recipe) == {"freeze_modules": [{"path": "thinker.model.visual"}, {"path": "thinker.model.audio_tower"}]}

    model = fresh_model(recipe, "transformers")
    renames = checkpoint_renames(model)
    before, _ = framework_trainability(mounted_at_checkpoint_names(fresh_model(recipe, "transformers"), renames),
                                       original, None)
    after, _ = framework_trainability(model, freeze_config(recipe), None)
    assert {renames.to_model(name) for name in before} == after
    assert sum(name.startswith(("thinker.model.visual.", "thinker.model.audio_tower.")) for name in after) == 489 + 518


def test_the_default_migration_moves_then_rewrites_to_the_new_vocabulary(recipe: Path) -> None:
    result = migrate(str(recipe), "--report", "json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)["files"]
    assert report["status"] == "preserved" and report["rules"] == ["MF004", "MF001", "MF006"]
    section = YAML(typ="safe", pure=True).load(recipe.read_text())["mmfreeze"]["freeze_config"]  # the source
    assert section["vision"] == {"tower": True, "projector": True} and section["audio"]["tower"] is True
    assert section["language_model"] is False


def test_a_path_no_rename_reaches_stays_an_error_naming_its_key(recipe: Path) -> None:
    recipe.write_text(recipe.read_text().replace("{path: thinker.audio_tower}", "{path: thinker.audio_encoder}"))
    before = recipe.read_text()
    result = migrate(str(recipe), "--disable", "MF001")
    assert result.exit_code == 3, result.output
    assert "freeze_config.freeze_modules[1]" in result.output and "thinker.audio_encoder" in result.output
    assert "matches no module of this model" in result.output
    assert recipe.read_text() == before


def test_a_glob_moves_by_its_literal_head_and_a_matching_selector_stays() -> None:
    from mmfreeze.freeze.recipe_model import model_request
    from mmfreeze.models.cache import StructureCache
    from mmfreeze.models.loader import load_structure
    from tests.nemo.framework_pipeline import read_recipe

    structure = load_structure(model_request(read_recipe(FIXTURE)), StructureCache(None)).structure
    section = {"freeze_modules": [{"glob": "thinker.visual.blocks.3[01]"}, {"path": "thinker.lm_head"}],
               "modules": ["thinker.audio_tower.layers.0"]}
    moves = moved_selectors(section, structure)
    assert [(m.key, m.new) for m in moves] == [
        ("freeze_config.freeze_modules[0].glob", "thinker.model.visual.blocks.3[01]"),
        ("freeze_config.modules[0]", "thinker.model.audio_tower.layers.0"),
    ]


LORA_FIXTURE = FIXTURE.parent / "qwen2_5_omni_7b_lora_no_towers.yaml"


def test_lora_exclude_patterns_for_5_18_paths_move_and_keep_the_towers_free_of_adapters(tmp_path: Path) -> None:
    """Unmoved, ``thinker.visual.*`` excludes nothing under 5.24: adapters would land in both towers."""
    from tests.framework.oracle import framework_trainability

    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    recipe = tmp_path / LORA_FIXTURE.name
    shutil.copy(LORA_FIXTURE, recipe)
    original = YAML(typ="safe", pure=True).load(recipe.read_text())["peft"]
    result = migrate(str(recipe), "--report", "json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)["files"]
    assert report["status"] == "preserved" and report["rules"] == ["MF004"]
    moved = YAML(typ="safe", pure=True).load(recipe.read_text())["peft"]
    assert moved["exclude_modules"] == ["thinker.model.visual.*", "thinker.model.audio_tower.*", "talker.*", "token2wav.*",
                                        "*lm_head*"]

    model = fresh_model(recipe, "transformers")
    renames = checkpoint_renames(model)
    _, before = framework_trainability(mounted_at_checkpoint_names(fresh_model(recipe, "transformers"), renames), None,
                                       original)
    _, after = framework_trainability(model, None, moved)
    assert {renames.to_model(name) for name in before} == after
    assert not any(name.startswith(("thinker.model.visual.", "thinker.model.audio_tower.")) for name in after)
    assert any(".lora_A." in name for name in after)
    _, unmoved = framework_trainability(fresh_model(recipe, "transformers"), None, original)
    assert any(name.startswith("thinker.model.visual.") and ".lora_A." in name for name in unmoved)
