"""Issue 25, item 3: `explain`'s verdict per unreachable group, under the recipe's own distributed settings."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import cli
from mmfreeze.explain.reach import Strategy, covering_modules
from mmfreeze.models.structure import ModelStructure, ParameterInfo
from tests.conftest import EXAMPLE_CONFIGS

LLAVA_13B = EXAMPLE_CONFIGS / "vlm_finetune/llava/llava_1_5_13b_scienceqa.yaml"


@pytest.mark.parametrize(("distributed", "says"), [
    ({"strategy": "ddp"}, "Expected to have finished reduction"),
    ({"strategy": "ddp", "find_unused_parameters": True}, "marks them unused every step"),
    ({"strategy": "fsdp2", "cp_size": 2}, "reduce-scatters zeros"),
    ({}, "leaves their gradients None"),
    ({"strategy": "megatron_fsdp"}, "not analysed"),
])
def test_what_a_missing_gradient_does_follows_the_recipes_strategy(distributed: dict, says: str) -> None:
    assert says in Strategy.of(distributed).consequence()


def test_the_fewest_modules_covering_exactly_the_unreachable_names_are_named() -> None:
    names = ["v.layers.0.w", "v.layers.1.w", "v.layers.1.b", "v.norm.w", "v.norm.b"]
    structure = ModelStructure(class_name="M", modules={}, module_aliases={},
                               parameters=tuple(ParameterInfo(name=name, shape=(1,), requires_grad=True) for name in names))
    assert covering_modules(["v.layers.1.w", "v.layers.1.b", "v.norm.w", "v.norm.b"], structure) == ["v.layers.1", "v.norm"]
    assert covering_modules(["v.layers.1.w"], structure) == ["v.layers.1.w"]


@pytest.mark.slow  # builds LLaVA-1.5-13B on meta and probes it
def test_explain_gives_each_unreached_group_its_consequence_and_fixes_as_keys() -> None:
    result = CliRunner().invoke(cli, ["explain", "--format", "json", str(LLAVA_13B)])
    assert result.exit_code == 0, result.output
    reach = json.loads(result.output)["reachability"]
    assert not reach["mixes_known"]
    text, image = reach["results"]
    assert (text["mix"], image["mix"], image["groups"]) == ("text", "text+image", [])
    (projector,) = text["groups"]
    assert projector["module"] == "model.multi_modal_projector (vision projector)" and projector["tensors"] == 4
    assert projector["consequence"].startswith("mmfreeze's dummy forward runs vision")
    assert projector["fixes"] == [
        "freeze it: freeze_config.vision: {projector: true}",
        "or give it a zero gradient on these batches: distributed.multimodal.vision.run_dummy_forward: true",
        "or, if the data carries vision inputs, say so: distributed.multimodal.batch_contract.mixes: [text+image]",
    ]
