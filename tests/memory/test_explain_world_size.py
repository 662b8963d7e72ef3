"""`mmfreeze explain --world-size N`: the memory table and its JSON, the defaults, and refusals naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from tests.cli.test_explain import TINY_LLAVA

RECIPE = """model:
  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_config
  torch_dtype: {dtype}
  config:
    _target_: transformers.AutoConfig.from_pretrained
    pretrained_model_name_or_path: ckpt
freeze_config:
  freeze_modules: [{{path: model.vision_tower}}]
optimizer:
  _target_: {optimizer}
  lr: 1.0e-5
distributed:
  strategy: fsdp2
  dp_size: {dp_size}
  tp_size: {tp_size}
  multimodal: {{frozen_sharding: {frozen_sharding}}}
"""


def write(root: Path, *, dtype: str = "torch.bfloat16", optimizer: str = "torch.optim.AdamW",
          dp_size: str = "null", settings: str = "", tp_size: int = 1, frozen_sharding: str = "root",
          extra: str = "") -> Path:
    (root / "pyproject.toml").write_text(f"[tool.mmfreeze]\n{settings}")
    (root / "ckpt").mkdir(exist_ok=True)
    (root / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    path = root / "recipe.yaml"
    path.write_text(RECIPE.format(dtype=dtype, optimizer=optimizer, dp_size=dp_size, tp_size=tp_size,
                                  frozen_sharding=frozen_sharding) + extra)
    return path


def explain(*args: str):
    return CliRunner().invoke(cli, ["explain", *args])


def test_json_carries_one_entry_per_rank_with_the_three_byte_fields(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path)), "--world-size", "3", "--format", "json")
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["memory"]
    assert memory["world_size"] == 3 and memory["world_size_source"] == "--world-size"
    assert [set(rank) for rank in memory["ranks"]] == [{"rank", "parameters", "gradients", "optimizer"}] * 3
    assert [rank["rank"] for rank in memory["ranks"]] == [0, 1, 2]
    assert all(rank["gradients"] > 0 and rank["optimizer"] > 0 for rank in memory["ranks"])
    assert "activations" in memory["scope"] and "transient" in memory["all_gather_peak"]["what"]


def test_text_prints_the_table_and_says_activations_are_out_of_scope(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path)), "--world-size", "2")
    assert result.exit_code == 0, result.output
    assert "memory per rank at 2 ranks" in result.output
    assert "activations out of scope" in result.output and "transient all-gather peak" in result.output


def test_the_world_size_setting_is_the_default(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path, settings="world_size = 4\n")), "--format", "json")
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["memory"]
    assert (memory["world_size"], memory["world_size_source"]) == (4, "[tool.mmfreeze] world_size")


def test_else_the_recipe_s_distributed_sizes(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path, dp_size="8")), "--format", "json")
    memory = json.loads(result.stdout)["memory"]
    assert (memory["world_size"], memory["world_size_source"]) == (8, "the recipe's distributed sizes")


def test_without_any_world_size_no_memory_is_computed(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path)), "--format", "json")
    assert json.loads(result.stdout)["memory"] is None


@pytest.mark.parametrize(("kwargs", "args", "key"), [
    ({"optimizer": "nemo_automodel.components.optim.optimizer.MuonConfig"}, ("--world-size", "2"), "optimizer._target_"),
    ({"dtype": "torch.int8"}, ("--world-size", "2"), "model.torch_dtype"),
    ({"dp_size": "4"}, ("--world-size", "2"), "distributed.dp_size"),
    ({}, ("--world-size", "1"), "world_size"),
])
def test_what_cannot_be_sized_is_an_input_error_naming_the_key(tmp_path: Path, kwargs, args, key) -> None:
    result = explain(str(write(tmp_path, **kwargs)), *args)
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert key in result.output


def test_auto_dtype_of_from_config_is_bfloat16(tmp_path: Path) -> None:
    """``from_config``'s ``auto`` is bfloat16 (``auto_model.py``), so it is sized, unlike ``from_pretrained``'s."""
    bf16 = json.loads(explain(str(write(tmp_path, dtype="auto")), "--world-size", "2", "--format", "json").stdout)
    explicit = json.loads(explain(str(write(tmp_path)), "--world-size", "2", "--format", "json").stdout)
    assert bf16["memory"]["ranks"] == explicit["memory"]["ranks"]


def test_a_default_world_size_the_layout_refuses_says_why_without_failing(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path, settings="world_size = 4\n", dp_size="2")), "--format", "json")
    assert result.exit_code == 0, result.output
    assert "distributed.dp_size" in json.loads(result.stdout)["memory"]["error"]


TEACHER = ("teacher_model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
           "  pretrained_model_name_or_path: ckpt\n")


def test_a_distillation_recipe_counts_its_teacher_s_parameters_on_every_rank_and_nothing_else(tmp_path: Path) -> None:
    """The teacher, frozen whole on the same ranks, adds its parameters (its own `memory.teacher` figures)
    to each rank's; the student's gradients and optimizer states are unchanged."""
    path = write(tmp_path)
    alone = json.loads(explain(str(path), "--world-size", "2", "--format", "json").stdout)["memory"]
    path.write_text(path.read_text() + TEACHER + "  torch_dtype: torch.bfloat16\n")
    result = explain(str(path), "--world-size", "2", "--format", "json")
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["memory"]
    teacher = memory["teacher"]
    assert teacher["fsdp_units"] > 0 and all(figure > 0 for figure in teacher["parameters"])
    assert [rank["parameters"] for rank in memory["ranks"]] == \
        [rank["parameters"] + figure for rank, figure in zip(alone["ranks"], teacher["parameters"], strict=True)]
    assert [(r["gradients"], r["optimizer"]) for r in memory["ranks"]] == \
        [(r["gradients"], r["optimizer"]) for r in alone["ranks"]]
    assert "teacher" not in alone


def test_a_teacher_that_cannot_be_built_under_a_default_world_size_says_why_without_failing(tmp_path: Path) -> None:
    path = write(tmp_path, settings="world_size = 2\n")
    path.write_text(path.read_text() + TEACHER.replace("ckpt", "no-such-teacher") + "  torch_dtype: torch.bfloat16\n")
    result = explain(str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    assert "no-such-teacher" in json.loads(result.stdout)["memory"]["error"]


@pytest.mark.parametrize(("extra", "key"), [
    ("", "teacher_model.torch_dtype"),  # from_pretrained, dtype auto: the checkpoint's, which mmfreeze does not read
    ("  torch_dtype: torch.bfloat16\nseparate_meshes: true\n", "separate_meshes"),
    ("  torch_dtype: torch.bfloat16\noffload_teacher_model: true\n", "offload_teacher_model"),
])
def test_a_teacher_that_cannot_be_sized_is_refused_naming_its_key(tmp_path: Path, extra: str, key: str) -> None:
    path = write(tmp_path)
    path.write_text(path.read_text() + TEACHER + extra)
    result = explain(str(path), "--world-size", "2")
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert f"{key}:" in result.output and "Traceback" not in result.output


TINY_VOXTRAL = {
    "model_type": "voxtral", "architectures": ["VoxtralForConditionalGeneration"], "audio_token_id": 24,
    "audio_config": {"model_type": "voxtral_encoder", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "num_mel_bins": 8, "max_source_positions": 16},
    "text_config": {"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "vocab_size": 64},
}
"""Voxtral's class keeps its audio encoder's ``embed_positions`` in fp32 (``_keep_in_fp32_modules_strict``)."""


def voxtral(root: Path, *, dtype: str, loader: str) -> Path:
    path = write(root, dtype=dtype)
    (root / "ckpt" / "config.json").write_text(json.dumps(TINY_VOXTRAL))
    text = path.read_text().replace("ForImageTextToText", "ForMultimodalLM").replace(
        "model.vision_tower", "model.audio_tower")
    if loader == "from_pretrained":
        text = text.replace(".from_config", ".from_pretrained").replace(
            "  config:\n    _target_: transformers.AutoConfig.from_pretrained\n    pretrained_model_name_or_path: ckpt",
            "  pretrained_model_name_or_path: ckpt")
    path.write_text(text)
    return path


@pytest.mark.parametrize("dtype", ["torch.bfloat16", "torch.float16"])
def test_a_tensor_the_model_keeps_in_fp32_is_sized_in_fp32_where_from_pretrained_loads_it_so(
    tmp_path: Path, dtype: str,
) -> None:
    """Voxtral's ``embed_positions`` (16 x 16, ``_keep_in_fp32_modules_strict``) loads in fp32 from a bf16 or
    fp16 `from_pretrained` recipe and in the recipe's dtype `from_config`: its shard of 128 elements per rank
    at 2 ranks costs 256 bytes more (both measured: tests/nemo/test_memory_exact.py)."""
    figures = {}
    for loader in ("from_config", "from_pretrained"):
        (tmp_path / loader).mkdir()
        result = explain(str(voxtral(tmp_path / loader, dtype=dtype, loader=loader)), "--world-size", "2",
                         "--format", "json")
        assert result.exit_code == 0, result.output
        figures[loader] = json.loads(result.stdout)["memory"]["ranks"]
    assert [rank["parameters"] + 256 for rank in figures["from_config"]] == \
        [rank["parameters"] for rank in figures["from_pretrained"]]
    assert [(r["gradients"], r["optimizer"]) for r in figures["from_config"]] == \
        [(r["gradients"], r["optimizer"]) for r in figures["from_pretrained"]]  # frozen: no gradient, no state


def test_a_recipe_that_forces_the_transformers_class_is_sized_though_the_framework_has_its_own() -> None:
    """The bundled Qwen2.5-Omni audio-visual recipe says ``force_hf: true``: 0.7.0 then trains transformers'
    whole Omni model, not its own thinker class, so the class every environment builds is the one that trains."""
    from tests.conftest import REPO_ROOT

    recipe = REPO_ROOT / "example_configs" / "audio_finetune" / "qwen2_5_omni" / "qwen2_5_omni_7b_av_mix.yaml"
    assert "force_hf: true" in recipe.read_text()
    result = explain(str(recipe), "--world-size", "8", "--format", "json")
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["memory"]
    assert memory["world_size"] == 8 and len(memory["ranks"]) >= 1
    assert all(rank["parameters"] > 0 and rank["gradients"] > 0 and rank["optimizer"] > 0 for rank in memory["ranks"])


def test_a_composite_model_is_refused_naming_its_target() -> None:
    """The bundled Gemma4 joint-drafter recipe builds ``Gemma4WithDrafter`` (the model and its drafter as one
    module): no run of one was measured, in either environment's build of it."""
    from tests.conftest import REPO_ROOT

    recipe = REPO_ROOT / "example_configs" / "vlm_finetune" / "gemma4_joint_drafter" / "gemma4_e2b_joint_drafter_medpix.yaml"
    result = explain(str(recipe), "--world-size", "8", "--format", "json")
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert "model._target_: builds Gemma4WithDrafter, a composite of base (Gemma4ForConditionalGeneration)" in result.output
