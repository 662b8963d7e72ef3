"""Every recipe class of nemo-automodel 0.7.0, guarded or refused (issue 41).

The classes are the framework's own list (``cli.utils._discover_recipe_classes``, what `automodel`
resolves ``recipe:`` against). The guard arms on torch's optimizer step hook, so a class is guarded
when its training loop steps a torch optimizer, whoever built it: its module's source says how. A
class that trains nothing the recipe's `freeze_config` decides is refused by `mmfreeze train` with
the reason; a class that steps no optimizer has nothing to guard. The table is printed at the end
of the run, with the run that shows each mechanism.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.exceptions import IntegrationError
from mmfreeze.nemo.launch import check_launch
from tests.conftest import SUMMARY_LINE_PROPERTY
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]

BUILDS = {
    "OptimizerConfig.build": ".build(", "instantiate(params=...)": "instantiate(params",
    "build_from_param_groups": "build_from_param_groups", "torch.optim directly": "torch.optim.",
}
"""How a recipe module makes its optimizer -> the text that shows it in the module's source."""
SHOWN_BY = {
    "FinetuneRecipeForVLM": "tests/nemo/test_training_runs.py (2 ranks, gloo, FSDP2: a match on both ranks, a change after setup stopped on both)",
}
"""Classes a run in CI trains under the guard; the others are guarded by the same hook, shown on a
plain loop and on transformers' Trainer (tests/guard/test_step_zero.py)."""
NOT_TRAINING = {"MineHardNegativesRecipe": "mines hard negatives with a frozen encoder: no optimizer steps",
                "PeagleRecipeMixin": "a mixin of the speculative-decoding recipes, not a recipe"}


def recipe_classes() -> dict[str, str]:
    from nemo_automodel.cli.utils import _discover_recipe_classes

    return dict(sorted(_discover_recipe_classes().items()))


def verdict(name: str, dotted: str, tmp_path: Path) -> tuple[str, str]:
    if name in NOT_TRAINING:
        return "nothing to guard", NOT_TRAINING[name]
    recipe = tmp_path / f"{name}.yaml"
    recipe.write_text(f"recipe: {dotted}\nmodel: {{}}\n")
    try:
        check_launch(recipe, guard=None)
    except IntegrationError as error:
        return "refused at launch", error.message
    module = importlib.import_module(dotted.rpartition(".")[0])
    source = "".join(inspect.getsource(m) for m in {module, *map(inspect.getmodule, type.mro(getattr(module, dotted.rpartition(".")[2])))}
                     if m is not None and m.__name__.startswith("nemo_automodel.recipes"))
    how = [label for label, text in BUILDS.items() if text in source]
    assert ".step()" in source or "optimizer" in source, f"{name}: no optimizer step found in its source"
    return "guarded at step 0", f"builds its optimizer by {' / '.join(how) or 'its base class'}; " + SHOWN_BY.get(
        name, "the same hook as tests/guard/test_step_zero.py")


def test_every_recipe_class_of_0_7_0_is_guarded_or_refused_with_the_reason(tmp_path: Path, record_property: Any) -> None:
    classes = recipe_classes()
    assert len(classes) >= 20
    table = {name: verdict(name, dotted, tmp_path) for name, dotted in classes.items()}
    assert table["TrainDiffusionRecipe"][0] == "refused at launch"
    assert "never reads freeze_config" in table["TrainDiffusionRecipe"][1]
    assert table["FinetuneRecipeForVLM"][0] == "guarded at step 0"
    assert table["DiffusionLMSFTRecipe"][0] == "guarded at step 0", "the diffusion-LLM recipes read freeze_config"
    assert [name for name, (outcome, _) in table.items() if outcome == "refused at launch"] == ["TrainDiffusionRecipe"]
    assert {outcome for outcome, _ in table.values()} <= {"guarded at step 0", "refused at launch", "nothing to guard"}
    lines = ["recipe classes of nemo-automodel 0.7.0 under `mmfreeze train`:"]
    lines += [f"  {name}: {outcome}: {why}" for name, (outcome, why) in table.items()]
    record_property(SUMMARY_LINE_PROPERTY, "\n".join(lines))
