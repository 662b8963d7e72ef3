"""Issue #21: nemo-automodel 0.7.0 runs every bundled recipe's trainability sections through
``mmfreeze.nemo.install()``, and leaves trainable exactly what mmfreeze computes.

For every recipe under ``example_configs/``, under both builders: the framework's own LoRA
injection, ``parse_freeze_config`` and ``_apply_trainability_policy`` (strict, on the whole
meta-built model) after ``install()`` give, name by name, the trainable set mmfreeze computes
for the same recipe and model. The framework-vocabulary recipes (the pre-migration twins and the
0.7 selector recipes) give the same outcome with and without ``install()``, and without it the
framework itself rejects every new-vocabulary section (so these tests reach the framework).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.freeze.keys import detect_vocabulary
from tests.conftest import EXAMPLE_CONFIGS, LEGACY_CORPUS, REPO_ROOT, recipes_under
from tests.nemo.framework_pipeline import BUILDERS, framework_outcome, mmfreeze_outcome, read_recipe
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]

SELECTOR_RECIPES = REPO_ROOT / "tests" / "migrate" / "fixtures" / "selectors"


CORPUS = recipes_under(EXAMPLE_CONFIGS)
FRAMEWORK_VOCABULARY = recipes_under(LEGACY_CORPUS) + recipes_under(SELECTOR_RECIPES)


def label(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("recipe", CORPUS, ids=label)
def test_the_framework_trains_what_mmfreeze_computes_after_install(recipe: Path, builder: str) -> None:
    from mmfreeze import nemo

    installation = nemo.install(recipe, guard=False)
    try:
        through_framework = framework_outcome(recipe, builder)
    finally:
        installation.uninstall()
    assert through_framework.error == ""
    expected = mmfreeze_outcome(recipe, builder)
    assert through_framework.trainable == expected.trainable, (
        f"newly trainable under the framework: {sorted(through_framework.trainable - expected.trainable)[:5]}; "
        f"newly frozen: {sorted(expected.trainable - through_framework.trainable)[:5]}")


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("recipe", FRAMEWORK_VOCABULARY, ids=label)
def test_a_framework_vocabulary_recipe_runs_the_same_with_and_without_install(recipe: Path, builder: str) -> None:
    from mmfreeze import nemo

    assert detect_vocabulary(read_recipe(recipe).document.get("freeze_config")) != "new"
    without = framework_outcome(recipe, builder)
    installation = nemo.install(recipe, guard=False)
    try:
        with_integration = framework_outcome(recipe, builder)
    finally:
        installation.uninstall()
    assert with_integration == without
    assert without.trainable or without.error


NEW_VOCABULARY = [path for path in CORPUS if detect_vocabulary(read_recipe(path).document.get("freeze_config")) == "new"]


@pytest.mark.parametrize("recipe", NEW_VOCABULARY, ids=label)
def test_without_install_the_framework_rejects_a_new_vocabulary_section(recipe: Path) -> None:
    outcome = framework_outcome(recipe, "framework")
    assert outcome.error.startswith("ValueError: freeze_config has unsupported option(s)"), outcome.error
