"""The committed `example_configs/` recipes freeze exactly what their pre-migration copies froze.

`mmfreeze migrate` (preserve mode) rewrote `tests/migrate/fixtures/pre_migration/` into
`example_configs/`; any recipe edited since, by hand or by a tool, must still have its legacy
frozen set, unless the difference is listed in INTENDED_DIFFERENCES with its reason. Both sides go
through the product's pipeline: the recipe reader, the model request, the structure built on meta
(shared between both sides and the rest of the session, `structure_of`), and the freeze engine.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from tests.conftest import EXAMPLE_CONFIGS, LEGACY_CORPUS, legacy_rules, recipes_under

RECIPES = [path.relative_to(EXAMPLE_CONFIGS).as_posix() for path in recipes_under(EXAMPLE_CONFIGS)]

# Recipe (relative to example_configs/) -> (why its frozen set differs from its pre-migration copy,
# the difference exactly: tensors per module). A listed difference that changes or disappears fails.
INTENDED_DIFFERENCES = {
    # Added (74899cf) as a nemo-automodel 0.7 selector recipe; its pre-migration copy is a
    # fabricated legacy predecessor, and legacy flags cannot unfreeze the mergers inside the
    # frozen ViT, nor freeze embed_tokens (the old code never read `freeze_embeddings`).
    "vlm_finetune/qwen3_vl/qwen3_vl_8b_docvqa_mergers.yaml": (
        "fabricated legacy predecessor: mergers train and embed_tokens is frozen only in the shipped recipe",
        {"newly frozen": {"model.language_model.embed_tokens": 1},
         "newly trainable": {"model.visual.deepstack_merger_list": 18, "model.visual.merger": 6}},
    ),
    # Added as a nemo-automodel 0.7 recipe (issue 26): LoRA plus the projector trained in full, which
    # only 0.7's unfreeze_modules can say under PEFT; its pre-migration copy is a fabricated legacy
    # predecessor (LoRA alone, the projector frozen by the PEFT baseline, no rate of its own).
    "vlm_peft/llava/llava_1_5_7b_lora_projector_rate.yaml": (
        "fabricated legacy predecessor: the projector trains only in the shipped recipe",
        {"newly frozen": {}, "newly trainable": {"model.multi_modal_projector.linear_1": 2,
                                                 "model.multi_modal_projector.linear_2": 2}},
    ),
}


def test_every_intended_difference_names_a_shipped_recipe() -> None:
    assert set(INTENDED_DIFFERENCES) <= set(RECIPES)
    assert all((LEGACY_CORPUS / relative).is_file() for relative in RECIPES), "a recipe has no pre-migration copy"


def _result(path: Path, structure_of, framework: FrameworkRules = CURRENT_RULES):
    recipe = load_recipe(path, framework=framework)
    return recipe_frozen_set(recipe, structure_of(model_request(recipe)))


def _modules(names: frozenset[str]) -> dict[str, int]:
    """Tensor counts per module, three name components deep: a readable diff."""
    return dict(sorted(Counter(".".join(name.split(".")[:3]) for name in names).items()))


@pytest.mark.slow
@pytest.mark.parametrize("relative", RECIPES)
def test_shipped_recipe_freezes_and_rates_what_its_pre_migration_copy_did(relative: str, structure_of) -> None:
    shipped_result = _result(EXAMPLE_CONFIGS / relative, structure_of)
    legacy_result = _result(LEGACY_CORPUS / relative, structure_of, legacy_rules())
    shipped, legacy = shipped_result.frozen, legacy_result.frozen
    if relative not in INTENDED_DIFFERENCES:  # rates: issue 26's selectors train each tensor at its old rate
        assert shipped_result.rates == legacy_result.rates, relative
    difference = {"newly frozen": _modules(shipped - legacy), "newly trainable": _modules(legacy - shipped)}
    if relative in INTENDED_DIFFERENCES:
        _, intended = INTENDED_DIFFERENCES[relative]
        assert difference == intended, f"{relative}: the intended difference changed: {difference}"
    else:
        assert shipped == legacy, f"{relative}: {difference}"
