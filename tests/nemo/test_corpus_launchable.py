"""Every bundled recipe is one nemo-automodel 0.7.0's own command can launch, judged by its own code.

``automodel recipe.yaml`` (``nemo_automodel/cli/app.py``, ``main``) reads the YAML with
``cli.utils.load_yaml``, requires a top-level ``recipe:`` and turns it into a dotted path with
``cli.utils.resolve_recipe_name`` (a short name by scanning ``nemo_automodel/recipes/``); the
local launcher imports that class with ``components/launcher/interactive.py``'s
``resolve_recipe_cls``. The VLM recipes (fine-tuning, and knowledge distillation, which builds its
teacher with the same ``build_model``) accept only the model ``_target_``s of
``recipes/vlm/finetune.py``'s ``_accepted_targets()``, checked by its ``_is_recipe_target`` on
the callable the framework's ``ConfigNode`` resolves the string to. Then the recipe is read with
``load_yaml_config``, as a run does first. Nothing here restates a framework rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_CONFIGS, recipes_under
from tests.nemo.framework_env import requires_framework
from tests.nemo.test_recipes_load import TEAM_BUILDERS, TRAINING_ENVIRONMENT

pytestmark = [pytest.mark.framework, requires_framework]

MODEL_SECTIONS = ("model", "teacher_model")
"""The sections a VLM recipe builds with ``build_model`` (the student, and the KD teacher)."""


def label(path: Path) -> str:
    return path.relative_to(EXAMPLE_CONFIGS).as_posix()


def recipe_class(raw: dict) -> type:
    """The class ``automodel`` runs for this YAML, resolved by the framework's own functions."""
    from nemo_automodel.cli.utils import resolve_recipe_name
    from nemo_automodel.components.launcher.interactive import resolve_recipe_cls

    section = raw.get("recipe")
    assert isinstance(section, str) and section.strip(), "no top-level `recipe:` (automodel exits 1)"
    return resolve_recipe_cls(resolve_recipe_name(section.strip()))


def target_check(cls: type):
    """The ``_is_recipe_target`` of the module that defines the recipe class or one of its bases
    (the VLM fine-tuning recipe's, for its knowledge-distillation subclass); ``None`` when the
    recipe builds whatever its ``_target_`` names."""
    for klass in cls.__mro__:
        module = sys.modules.get(klass.__module__)
        if module is not None and hasattr(module, "_accepted_targets"):
            return module._is_recipe_target
    return None


@pytest.mark.parametrize("recipe", recipes_under(EXAMPLE_CONFIGS), ids=label)
def test_the_frameworks_command_resolves_the_recipe_class_and_accepts_its_models(
    recipe: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nemo_automodel.cli.utils import load_yaml
    from nemo_automodel.components.config.loader import ConfigNode, load_yaml_config
    from nemo_automodel.recipes.base_recipe import BaseRecipe

    for variable, value in TRAINING_ENVIRONMENT.items():
        monkeypatch.setenv(variable, value)
    raw = load_yaml(recipe)
    cls = recipe_class(raw)
    assert issubclass(cls, BaseRecipe)

    accepts = target_check(cls)
    sections = [name for name in MODEL_SECTIONS if isinstance(raw.get(name), dict)]
    assert "model" in sections
    if "teacher_model" in sections:  # read only by a distillation recipe, whose module builds it
        assert hasattr(sys.modules[cls.__module__], "_build_teacher_model"), f"{cls.__name__} ignores teacher_model"
    if accepts is not None:
        for name in sections:
            # The model section alone, as the framework's loader wraps it: its `_target_` resolved.
            target = ConfigNode(raw[name]).get("_target_")
            assert accepts(target), f"{cls.__name__} refuses {name}._target_ {raw[name]['_target_']}"

    if label(recipe) in TEAM_BUILDERS:
        with pytest.raises(ImportError, match="cannot resolve attribute 'mixture.InterleavedMixture'"):
            load_yaml_config(str(recipe))
        return
    assert load_yaml_config(str(recipe)).get("recipe") == raw["recipe"]
