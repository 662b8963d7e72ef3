from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from click.testing import CliRunner

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from mmfreeze.boundary.releases import framework_rules

TINY_LLAVA = {
    "model_type": "llava",
    "architectures": ["LlavaForConditionalGeneration"],
    "text_config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 128},
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                      "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 32, "patch_size": 8,
                      "projection_dim": 32},
}


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    path = tmp_path / "recipe.yaml"
    path.write_text(
        "model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
        "  pretrained_model_name_or_path: ckpt\n"
    )
    return path


def _reference_counts(config_dict: dict) -> tuple[int, int, int]:
    """Parameters, parameter tensors and tied aliases of the config's model, from transformers
    directly (no mmfreeze code path): built on meta, each tensor counted once however many
    names it has."""
    config = transformers.LlavaConfig.from_dict(config_dict)
    with torch.device("meta"):
        model = transformers.LlavaForConditionalGeneration(config)
    unique = list(model.parameters())  # de-duplicates tied tensors
    every_name = list(model.named_parameters(remove_duplicate=False))
    return sum(p.numel() for p in unique), len(unique), len(every_name) - len(unique)


def test_explain_json_reports_the_real_class_and_parameter_count(recipe: Path) -> None:
    result = CliRunner().invoke(cli, ["explain", str(recipe), "--format", "json"])
    assert result.exit_code == 0, result.output
    explanation = json.loads(result.stdout)
    assert explanation["architecture"] == "LlavaForConditionalGeneration"
    assert explanation["config_source"]["kind"] == "local"
    parameters, tensors, tied = _reference_counts(TINY_LLAVA)
    assert (explanation["parameters"], explanation["parameter_tensors"], explanation["tied_aliases"]) == (
        parameters, tensors, tied)


def test_explain_bad_target_exits_with_input_error_and_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  _target_: os.system\n  pretrained_model_name_or_path: x\n")
    result = CliRunner().invoke(cli, ["explain", str(path)])
    assert result.exit_code == ExitCode.INPUT_ERROR
    assert "not in the allowlist" in result.stderr and "Traceback" not in result.output


def test_every_command_has_help() -> None:
    for command in cli.list_commands(None):
        assert CliRunner().invoke(cli, [command, "--help"]).exit_code == 0
    assert CliRunner().invoke(cli, ["--version"]).output.startswith("mmfreeze, version")


def declare(recipe: Path, release: str) -> None:
    (recipe.parent / "pyproject.toml").write_text(f'[tool.mmfreeze]\nframework = "{release}"\n')


@pytest.mark.parametrize(
    ("freeze_config", "declared", "framework"),
    [("{freeze_vision_tower: true}", None, "nemo-automodel 0.7"),
     ("{freeze_embeddings: true}", "0.6", "nemo-automodel 0.6"),
     ("{unfreeze_modules: [{path: model.multi_modal_projector}]}", "0.7", "nemo-automodel 0.7")],
)
def test_explain_states_which_framework_release_s_rules_applied_and_why(
    recipe: Path, freeze_config: str, declared: str | None, framework: str,
) -> None:
    """The repository's release reads every recipe: declared, else the installed nemo-automodel's; text and JSON."""
    recipe.write_text(recipe.read_text() + f"freeze_config: {freeze_config}\n")
    if declared is not None:
        declare(recipe, declared)
    reason = "[tool.mmfreeze] framework" if declared else framework_rules(None).reason
    result = CliRunner().invoke(cli, ["explain", str(recipe), "--format", "json"])
    assert result.exit_code == 0, result.output
    freezing = json.loads(result.stdout)["freezing"]
    assert (freezing["framework"], freezing["framework_reason"]) == (framework, reason)
    text = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    assert f"rules of {framework}: {reason}" in " ".join(text.output.split())


@pytest.mark.parametrize("declared", [None, "0.7"])
def test_a_typo_in_a_legacy_key_is_an_input_error_naming_the_right_key_under_either_release(
    recipe: Path, declared: str | None,
) -> None:
    recipe.write_text(recipe.read_text() + "freeze_config: {freeze_vison_tower: false}\n")
    if declared is not None:
        declare(recipe, declared)
    result = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    assert result.exit_code == ExitCode.INPUT_ERROR
    flat = " ".join(result.output.split())
    assert "freeze_config.freeze_vison_tower: unknown key (did you mean 'freeze_vision_tower'?)" in flat
    assert 'declares it: framework = "0.6" under [tool.mmfreeze]' in flat
    declare(recipe, "0.6")  # 0.6 ignored the typo (dict.get) and froze the tower by default: a silent change
    under_06 = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    assert under_06.exit_code == ExitCode.INPUT_ERROR
    assert "nemo-automodel 0.6 ignores freeze_config.freeze_vison_tower: unknown key (did you mean " \
           "'freeze_vision_tower'?)" in " ".join(under_06.output.split())


def test_explain_reports_a_selector_that_matches_nothing_as_an_input_error(recipe: Path) -> None:
    recipe.write_text(recipe.read_text() + "freeze_config: {freeze_modules: [{glob: 'vision_towr*'}]}\n")
    result = CliRunner().invoke(cli, ["explain", str(recipe)])
    assert result.exit_code == ExitCode.INPUT_ERROR
    assert "freeze_config.freeze_modules[0]" in result.output and "`glob: vision_towr*` matches no module of this model" in result.output


def test_piped_text_output_keeps_every_module_path_whole(recipe: Path) -> None:
    """Not a terminal: no path is cut to fit 80 columns (CliRunner's output is not a TTY)."""
    paths = [m["path"] for m in json.loads(CliRunner().invoke(cli, ["explain", str(recipe), "--format", "json"]).stdout)["multimodal_modules"]]
    long_name = recipe.with_name("a_recipe_name_long_enough_to_need_more_than_eighty_columns_in_any_table.yaml")
    long_name.write_text(recipe.read_text())
    text = CliRunner().invoke(cli, ["explain", str(long_name)]).output
    assert paths and all(path in text for path in paths) and long_name.name in text and "…" not in text


def _multimodal_recipe(recipe: Path, multimodal: str) -> Path:
    recipe.write_text(recipe.read_text() + "freeze_config: {vision: {tower: true}}\n"
                      f"distributed:\n  dp_size: 2\n  multimodal: {multimodal}\n")
    return recipe


def test_explain_check_exits_rejected_when_setup_validation_rejects_the_policy(recipe: Path) -> None:
    """A trainable projector that ranks may skip, with the dummy forward turned off: ranks that
    skip vision never reduce its gradients, unless the batch planner runs vision on every rank."""
    _multimodal_recipe(recipe, "{vision: {run_dummy_forward: false}}")
    plain = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    checked = CliRunner().invoke(cli, ["explain", str(recipe), "--check"], terminal_width=400)
    assert plain.exit_code == 0 and "rejected at setup" in plain.output
    assert checked.exit_code == ExitCode.REJECTED


def test_a_batch_contract_declared_in_the_recipe_is_the_one_explain_uses(recipe: Path) -> None:
    _multimodal_recipe(recipe, "{vision: {run_dummy_forward: false}, batch_contract: {rank_uniform: [vision]}}")
    result = CliRunner().invoke(cli, ["explain", str(recipe), "--check", "--format", "json"])
    assert result.exit_code == 0, result.output
    distributed = json.loads(result.stdout)["distributed"]
    assert distributed["verdict"] == "accepted"
    assert distributed["batch_contract"] == {"rank_uniform": ["vision"],
                                             "declared_by": "recipe: distributed.multimodal.batch_contract"}
