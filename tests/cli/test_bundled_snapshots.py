"""The bundled snapshots checked in the test environment, each outcome counted (issue 42).

The snapshots describe the framework's own classes under its pin (transformers 5.18.0), checked
exactly in `.ci/framework_env`. Here, on the newest transformers and its classes, each recipe must
still be checked and read as a release or builder difference, except where the two builders build
another model: those are named below with what differs, and every other recipe's difference is the
release's alone (version only, renamed, probe only). The counts are printed at the end of the run.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.versions import installed_version
from tests.cli.test_snapshot import run
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT, SNAPSHOT_TRANSFORMERS_VERSION, SUMMARY_LINE_PROPERTY, recipes_under

pytestmark = [
    pytest.mark.slow,  # the whole corpus
    pytest.mark.skipif(installed_version("transformers") == SNAPSHOT_TRANSFORMERS_VERSION,
                       reason="where the snapshots are made, .ci/framework_env checks them exactly (exit 0)"),
]

ANOTHER_MODEL = {
    "example_configs/audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_librispeech.yaml": "architecture",
    "example_configs/audio_finetune/qwen3_omni_moe/qwen3_omni_30b_a3b_common_voice_ep.yaml": "architecture",
    "example_configs/vlm_finetune/kimi_k25/kimi_k25_cord_v2_ep.yaml": "architecture",
    "example_configs/vlm_peft/kimi_k25/kimi_k25_lora_docvqa.yaml": "architecture",
    "example_configs/vlm_finetune/minimax_m3/minimax_m3_vl_medpix_ep32.yaml": "trainable_tensors",
}
"""Recipe -> the header field that shows the transformers class is another model than the
framework's: the Omni thinkers alone against the whole Omni model (talker included), Kimi-K2.5's
own module tree, and MiniMax-M3's projector, which the framework's class keeps inside its tower.
Before issue 48 these five read as "changed"."""
SAME_NAME_OTHER_CLASS = {
    "example_configs/audio_finetune/gemma4/gemma4_e2b_librispeech.yaml",
    "example_configs/distillation/qwen3_vl_32b_to_4b_chartqa.yaml",
    "example_configs/text_finetune/llama3_1_8b_ultrachat_sft.yaml",
    "example_configs/text_finetune/qwen3_8b_teacher_warmup.yaml",
    "example_configs/vlm_finetune/gemma4/gemma4_e2b_cauldron_ai2d.yaml",
    "example_configs/vlm_finetune/gemma4/gemma4_e2b_cord_v2_vision_tuned.yaml",
    "example_configs/vlm_finetune/gemma4/gemma4_e2b_speech_vision_mix.yaml",
    "example_configs/vlm_finetune/mistral3/mistral_small_3_1_24b_pixmo.yaml",
    "example_configs/vlm_finetune/qwen3_5/qwen3_5_9b_cord_v2.yaml",
    "example_configs/vlm_finetune/qwen3_5_moe/qwen3_5_35b_a3b_cauldron.yaml",
    "example_configs/vlm_finetune/qwen3_vl/qwen3_vl_4b_mmmu.yaml",
    "example_configs/vlm_finetune/qwen3_vl/qwen3_vl_8b_cord_v2.yaml",
    "example_configs/vlm_finetune/qwen3_vl/qwen3_vl_8b_docvqa_mergers.yaml",
    "example_configs/vlm_finetune/qwen3_vl/qwen3_vl_8b_long_video_cp.yaml",
    "example_configs/vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_cauldron_ep.yaml",
    "example_configs/vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_cauldron_router_rate.yaml",
    "example_configs/vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_medpix.yaml",
    "example_configs/vlm_peft/mistral3/mistral_small_lora_cord.yaml",
    "example_configs/vlm_peft/qwen3_5_moe/qwen3_5_35b_a3b_lora_medpix.yaml",
    "example_configs/vlm_peft/qwen3_vl/qwen3_vl_8b_lora_chartqa.yaml",
    "example_configs/vlm_peft/qwen3_vl_moe/qwen3_vl_30b_a3b_lora_cord.yaml",
}
"""Recipes whose architecture the framework builds with its own class of the same name (the header's
``divergence`` says so here): another class than the snapshot's, though named alike."""
RELEASE_ONLY = {"version_only", "renamed", "probe_only"}


def test_every_bundled_snapshot_is_checked_and_differs_only_by_release_or_by_the_class_the_builder_builds(
    tmp_path: Path, record_property: Any,
) -> None:
    report_file = tmp_path / "report.json"
    result = run(REPO_ROOT, "--check", "--report", "json", "--report-file", str(report_file), "example_configs")
    assert "Traceback" not in result.stderr, result.stderr
    outcomes = {outcome["recipe"]: outcome for outcome in json.loads(report_file.read_text())["recipes"]}
    recipes = {path.relative_to(REPO_ROOT).as_posix() for path in recipes_under(EXAMPLE_CONFIGS)}
    assert set(outcomes) == recipes, "every bundled recipe is reported"
    counts = Counter(outcome["status"] for outcome in outcomes.values())
    switched = {recipe for recipe, outcome in outcomes.items() if outcome["status"] == "builder_switch"}
    assert switched == set(ANOTHER_MODEL) | SAME_NAME_OTHER_CLASS, counts
    for recipe, field in ANOTHER_MODEL.items():
        assert field in {header["field"] for header in outcomes[recipe]["change"]["header_changes"]}, recipe
    for recipe in switched:
        assert outcomes[recipe]["message"].startswith("snapshot: "), outcomes[recipe]
        assert f"by nemo-automodel 0.7.0 (transformers {SNAPSHOT_TRANSFORMERS_VERSION}); here: " in outcomes[recipe]["message"]
    assert set(counts) - {"builder_switch"} <= RELEASE_ONLY, counts
    assert result.returncode == ExitCode.BUILDER_SWITCH  # neither changed (1) nor input error (3)
    record_property(SUMMARY_LINE_PROPERTY, (
        f"bundled snapshots (transformers {SNAPSHOT_TRANSFORMERS_VERSION}, the framework's classes) checked under "
        f"transformers {installed_version('transformers')} with its classes: "
        + ", ".join(f"{counts[status]} {status.replace('_', ' ')}" for status in
                    ("builder_switch", "probe_only", "renamed", "version_only") if counts[status])
        + f" (built by another class: {len(ANOTHER_MODEL)} another model, {len(SAME_NAME_OTHER_CLASS)} the "
          "framework's own class of the same name; named in tests/cli/test_bundled_snapshots.py)"))


def test_accept_release_never_writes_a_snapshot_built_by_another_class(tmp_path: Path) -> None:
    """`--accept-release` in the test environment writes the release-only differences and leaves every
    builder switch as it is: the framework environment would fail on those otherwise (issue 48)."""
    work = tmp_path / "repo"
    shutil.copytree(EXAMPLE_CONFIGS, work / "example_configs")
    shutil.copytree(REPO_ROOT / "snapshots", work / "snapshots")
    shutil.copy(REPO_ROOT / "pyproject.toml", work / "pyproject.toml")
    switched = [work / "snapshots" / (recipe + ".frozen.txt") for recipe in (*ANOTHER_MODEL, *SAME_NAME_OTHER_CLASS)]
    before = {path: path.read_bytes() for path in switched}
    result = run(work, "--accept-release", "example_configs")
    assert result.returncode == ExitCode.BUILDER_SWITCH, result.stdout + result.stderr
    assert {path: path.read_bytes() for path in switched} == before
    again = run(work, "--check", "example_configs")
    assert again.returncode == ExitCode.BUILDER_SWITCH and "version only" not in again.stderr, again.stderr
