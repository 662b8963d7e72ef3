"""--builder / --builder-fallback through the real CLI: the choice and its reason are printed, the
snapshot header names the builder and, for an architecture the framework builds itself, says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import cli
from mmfreeze.models import framework
from mmfreeze.snapshots.format import parse_snapshot

TINY_QWEN3_VL = {
    "model_type": "qwen3_vl", "architectures": ["Qwen3VLForConditionalGeneration"], "tie_word_embeddings": True,
    "text_config": {"model_type": "qwen3_vl_text", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
                    "tie_word_embeddings": True},
    "vision_config": {"model_type": "qwen3_vl", "depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                      "out_hidden_size": 64, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
                      "num_position_embeddings": 64, "deepstack_visual_indexes": [0], "in_channels": 3},
}
STATEMENT = (
    "built as transformers class Qwen3VLForConditionalGeneration; the framework builds its own "
    "Qwen3VLForConditionalGeneration (nemo_automodel.components.models.qwen3_vl.model) for this architecture"
)


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_QWEN3_VL))
    path = tmp_path / "recipes" / "tiny.yaml"
    path.parent.mkdir()
    path.write_text(
        "model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
        "  pretrained_model_name_or_path: ../ckpt\n"
    )
    return path


def test_snapshot_with_builder_transformers_states_the_divergence(recipe: Path, tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    result = CliRunner().invoke(cli, ["snapshot", "--update", "--builder", "transformers", "--workers", "1",
                                      "--snapshot-dir", str(snapshots), str(recipe)])
    assert result.exit_code == 0, result.output
    assert "builder: transformers (builder = transformers was asked for)" in result.stderr
    header = parse_snapshot(next(snapshots.rglob("*.frozen.txt")).read_text()).header
    assert (header.builder, header.divergence) == ("transformers", STATEMENT)


def test_explain_prints_the_builder_its_reason_and_the_divergence(recipe: Path) -> None:
    result = CliRunner().invoke(cli, ["explain", str(recipe), "--builder", "transformers", "--format", "json"])
    assert result.exit_code == 0, result.output
    builder = json.loads(result.stdout)["builder"]
    assert builder == {"choice": "transformers", "reason": "builder = transformers was asked for", "fallback": "none",
                       "builder": "transformers", "divergence": STATEMENT}
    text = CliRunner().invoke(cli, ["explain", str(recipe), "--builder", "transformers"], terminal_width=400).output
    assert "builder = transformers was asked for" in text and STATEMENT in text


def test_builder_framework_without_the_framework_is_a_usage_error(recipe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framework, "installed_version", lambda name: "missing" if name == "nemo-automodel" else "5.24.0")
    result = CliRunner().invoke(cli, ["explain", str(recipe), "--builder", "framework"])
    assert result.exit_code == 2
    assert "builder = framework needs nemo-automodel installed" in result.output
