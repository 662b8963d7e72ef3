from __future__ import annotations

import pytest

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.targets import DEFAULT_TARGETS, parse_target_assignment, resolve_auto_class


@pytest.mark.parametrize(
    ("target", "auto_class"),
    [
        ("nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained", "AutoModelForImageTextToText"),
        ("nemo_automodel.NeMoAutoModelForMultimodalLM.from_pretrained", "AutoModelForMultimodalLM"),
        ("nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained", "AutoModelForCausalLM"),
        ("transformers.AutoModelForImageTextToText.from_pretrained", "AutoModelForImageTextToText"),
    ],
)
def test_documented_targets_map_to_their_auto_class(target: str, auto_class: str) -> None:
    assert resolve_auto_class(target, DEFAULT_TARGETS, source="r.yaml") == auto_class


def test_near_miss_target_suggests_the_allowed_spelling() -> None:
    with pytest.raises(RecipeError, match="Did you mean"):
        resolve_auto_class("my.NeMoAutoModelForImageTextToText.from_pretrained", DEFAULT_TARGETS, source="r.yaml")


@pytest.mark.parametrize("text", ["no-equals", "=AutoModelForCausalLM", "x.y=os.system"])
def test_malformed_allow_target_is_rejected(text: str) -> None:
    with pytest.raises(RecipeError, match="--allow-target"):
        parse_target_assignment(text)
