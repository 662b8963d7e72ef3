"""Issue contract: on every legacy recipe, the intent-equivalent new config runs, and what it
changes against the legacy frozen set is recorded as data (a syrupy snapshot), not as a failure."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set, recipe_trained_model
from mmfreeze.freeze.summary import LANGUAGE_MODEL_GROUP, UNOWNED_GROUP
from mmfreeze.freeze.targets import group_key
from mmfreeze.migrate.intent import intent_section
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import Recipe, load_recipe
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.resolver.inventory import ResolvedInventory
from mmfreeze.resolver.resolve import resolve_structure
from tests.conftest import LEGACY_CORPUS, legacy_rules, recipes_under


def parameter_groups(inventory: ResolvedInventory) -> dict[str, str]:
    """Raw parameter name -> the section key of its group (``vision.tower``, ``language_model``, ``unowned``)."""
    raw = inventory.raw_parameter_names
    groups = {raw[name]: group_key(info.spec.modality, info.spec.role)
              for info in inventory.modules for name in info.parameters}
    groups.update((raw[name], LANGUAGE_MODEL_GROUP) for name in inventory.language_model.parameters)
    groups.update((raw[name], UNOWNED_GROUP) for name in inventory.unowned)
    return groups


def intent_difference(recipe: Recipe, cache: StructureCache) -> dict[str, Any]:
    overrides = override_specs(recipe.module_overrides)
    structure = load_structure(model_request(recipe), cache).structure
    legacy = recipe_frozen_set(recipe, structure)
    if legacy.vocabulary == "absent":
        return {"vocabulary": "absent"}
    # What `migrate --mode intent` plans on: the model the section reaches (a composite's base).
    trained = recipe_trained_model(recipe, structure)
    inventory = resolve_structure(trained.structure, override_specs=overrides)
    intent = intent_section(trained.structure, recipe.freeze_config, inventory, source=recipe.display_path,
                            rules=recipe.framework)
    groups = parameter_groups(inventory)
    return {
        "intent": intent.section,
        "notes": list(intent.notes),
        "newly_frozen": dict(sorted(Counter(groups[n] for n in intent.newly_frozen).items())),
        "newly_trainable": dict(sorted(Counter(groups[n] for n in intent.newly_trainable).items())),
    }


@pytest.mark.slow
def test_intent_translation_differences_on_the_legacy_corpus(snapshot: Any) -> None:
    cache = StructureCache(None)
    differences = {
        path.relative_to(LEGACY_CORPUS).as_posix(): intent_difference(load_recipe(path, framework=legacy_rules()), cache)
        for path in recipes_under(LEGACY_CORPUS)
    }
    assert differences == snapshot
