"""Expert parallelism in the memory model: what it cannot size is an input error naming the key; and LoRA
on the framework's grouped experts, which mmfreeze does not model, is refused before any figure.

Per-rank bytes of the sized cases against real multi-rank runs (the framework's own Qwen3-VL-MoE class
through its MoE parallelizer, on 2 and 4 ranks, with LoRA) are `tests/nemo/test_memory_exact.py`'s. Here,
the same tiny recipe at sizes the framework or FSDP2 refuses, and a model without the framework's MoE
layers. Marked `framework` so that `.ci/framework_env` runs it where the framework builds its own class;
the test environment builds transformers' class of another release, which the memory model refuses first.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mmfreeze.models.framework import choose_builder
from tests.memory.test_explain_world_size import explain, write
from tests.nemo.test_memory_exact import CASES, write_recipe

pytestmark = pytest.mark.framework

FRAMEWORK_BUILDS = choose_builder("auto").kind == "framework"
"""The framework's environment: its builder builds its own Qwen3-VL-MoE class."""
MOE = next(case for case in CASES if case.name == "qwen3_vl_moe_expert_parallel")
"""6 experts a layer; each expert's dim 1 has 32 rows (``gate_and_up_projs``) or 24 (``down_projs``)."""


@pytest.mark.parametrize(("ep", "tp", "world", "message"), [
    (4, 1, 4, "which does not divide the experts of model.language_model.layers.0.mlp.experts."),
    (2, 1, 6, "FSDP2 refuses an uneven split on any dim but 0"),
    (4, 1, 6, "which does not divide the world size (6)"),
    (2, 2, 4, "beside tp_size 2"),
], ids=["6 experts over 4", "32 rows over 3 ranks on dim 1", "world 6", "with tensor parallelism"])
def test_what_expert_parallelism_cannot_size_is_an_input_error_naming_the_key(
    tmp_path: Path, ep: int, tp: int, world: int, message: str,
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    recipe = write_recipe(replace(MOE, ep=ep, tp=tp), tmp_path)
    result = explain("--world-size", str(world), str(recipe))
    assert result.exit_code == 3, result.output
    if not FRAMEWORK_BUILDS:  # transformers' class of another release: the framework would train its own
        assert "model: the framework builds Qwen3VLMoeForConditionalGeneration" in result.output, result.output
        return
    assert f"distributed.ep_size: is {ep}" in result.output and message in result.output, result.output


def test_expert_parallelism_on_a_transformers_class_is_refused_as_the_framework_refuses_it(tmp_path: Path) -> None:
    """0.7.0 refuses it when it builds the model (a stock run: `tests/nemo/test_memory_exact.py`'s refused case)."""
    result = explain("--world-size", "2", str(write(tmp_path, extra="  ep_size: 2\n")))
    assert result.exit_code == 3, result.output
    assert "distributed.ep_size: is 2, but the framework trains transformers' LlavaForConditionalGeneration here, " \
           "not one of its own MoE classes" in result.output, result.output


def test_expert_parallelism_on_a_framework_class_without_its_moe_layers_is_refused(tmp_path: Path) -> None:
    """The framework's own dense Qwen3-VL. The test environment builds transformers' class of another release,
    refused first."""
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    dense = next(case for case in CASES if case.name == "qwen3_vl_own_parallelizer")
    result = explain("--world-size", "2", str(write_recipe(replace(dense, ep=2), tmp_path)))
    assert result.exit_code == 3, result.output
    if not FRAMEWORK_BUILDS:
        assert "model: the framework builds Qwen3VLForConditionalGeneration" in result.output, result.output
        return
    assert "distributed.ep_size: is 2, but mmfreeze finds no MoE layer of the framework's in " \
           "Qwen3VLForConditionalGeneration's blocks under model.language_model.layers" in result.output, result.output


def test_lora_on_the_frameworks_grouped_experts_is_refused_where_the_framework_patches_them(tmp_path: Path) -> None:
    """The framework's own LoRA (``apply_lora_to_linear_modules``) patches the experts a `target_modules`
    pattern names with adapters of their own (``GroupedExpertsLoRA``), which mmfreeze does not model: the
    recipe is an input error naming the key, not a frozen set without them. Where the framework's class is
    not built (the test environment: transformers' experts hold plain tensors, no Linear), nothing is patched."""
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    peft = {"_target_": "nemo_automodel.components._peft.lora.PeftConfig", "target_modules": ["*.mlp.experts"],
            "dim": 4, "alpha": 8}
    recipe = write_recipe(replace(MOE, ep=1, freeze_config=None, peft=peft), tmp_path)
    result = explain(str(recipe))
    if not FRAMEWORK_BUILDS:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 3, result.output
    assert "peft.target_modules: matches model.language_model.layers.0.mlp.experts, the framework's grouped experts " \
           "(GroupedExperts)" in result.output, result.output

    from nemo_automodel.components._peft.lora import PeftConfig, apply_lora_to_linear_modules

    from mmfreeze.models.framework import TRANSFORMERS_SPEC
    from mmfreeze.models.framework_build import build_framework_model

    config = json.loads((tmp_path / "models" / "qwen3_vl_moe" / "config.json").read_text())
    model = build_framework_model(config, "AutoModelForImageTextToText", replace(TRANSFORMERS_SPEC, kind="framework"),
                                  source="moe.yaml").model
    apply_lora_to_linear_modules(model, PeftConfig(target_modules=peft["target_modules"], dim=4, alpha=8),
                                 skip_freeze=True)
    assert type(model.get_submodule("model.language_model.layers.0.mlp.experts")).__name__ == "GroupedExpertsLoRA"
