"""Issue #21: the integration (``mmfreeze.nemo.install()``) changes nothing the framework already runs.

The bundled recipes train on the stock framework (their compiled sections:
``test_compiled_on_stock_framework.py``). The framework-vocabulary recipes (the pre-migration twins and the
0.7 selector recipes) give the same outcome with and without ``install()``, and without it the
framework itself rejects every new-vocabulary section (so these tests reach the framework).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.freeze.keys import detect_vocabulary
from tests.conftest import EXAMPLE_CONFIGS, LEGACY_CORPUS, REPO_ROOT, recipes_under
from tests.nemo.framework_pipeline import BUILDERS, framework_outcome, read_recipe
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]

SELECTOR_RECIPES = REPO_ROOT / "tests" / "migrate" / "fixtures" / "selectors"


CORPUS = recipes_under(EXAMPLE_CONFIGS)
FRAMEWORK_VOCABULARY = recipes_under(LEGACY_CORPUS) + recipes_under(SELECTOR_RECIPES)


def label(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


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
def test_the_framework_rejects_a_new_vocabulary_source_in_freeze_config(recipe: Path) -> None:
    """Why the source stays under `mmfreeze:`: in `freeze_config` the stock framework rejects it."""
    outcome = framework_outcome(recipe, "framework", source=True)
    assert outcome.error.startswith("ValueError: freeze_config has unsupported option(s)"), outcome.error
