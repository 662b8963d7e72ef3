"""The bundled snapshots checked in the test environment, each outcome counted (issue 42).

The snapshots describe the framework's own classes under its pin (transformers 5.18.0), checked
exactly in `.ci/framework_env`. Here, on the newest transformers and its classes, each recipe must
still be checked and read as a release or builder difference, except where the two builders build
another model: those are named below with what differs, and every other recipe's difference is the
release's alone (version only, renamed, probe only). The counts are printed at the end of the run.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.versions import SNAPSHOT_TRANSFORMERS_VERSION, installed_version
from tests.cli.test_snapshot import run
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT, SUMMARY_LINE_PROPERTY, recipes_under

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
own module tree, and MiniMax-M3's projector, which the framework's class keeps inside its tower."""
RELEASE_ONLY = {"version_only", "renamed", "probe_only"}


def test_every_bundled_snapshot_is_checked_and_differs_only_by_release_or_by_the_model_the_builder_builds(
    tmp_path: Path, record_property: Any,
) -> None:
    report_file = tmp_path / "report.json"
    result = run(REPO_ROOT, "--check", "--report", "json", "--report-file", str(report_file), "example_configs")
    assert "Traceback" not in result.stderr, result.stderr
    outcomes = {outcome["recipe"]: outcome for outcome in json.loads(report_file.read_text())["recipes"]}
    recipes = {path.relative_to(REPO_ROOT).as_posix() for path in recipes_under(EXAMPLE_CONFIGS)}
    assert set(outcomes) == recipes, "every bundled recipe is reported"
    counts = Counter(outcome["status"] for outcome in outcomes.values())
    changed = {recipe for recipe, outcome in outcomes.items() if outcome["status"] == "changed"}
    assert changed == set(ANOTHER_MODEL), counts
    for recipe, field in ANOTHER_MODEL.items():
        assert field in {header["field"] for header in outcomes[recipe]["change"]["header_changes"]}, recipe
    assert set(counts) - {"changed"} <= RELEASE_ONLY, counts
    assert result.returncode == ExitCode.CHANGED
    record_property(SUMMARY_LINE_PROPERTY, (
        f"bundled snapshots (transformers {SNAPSHOT_TRANSFORMERS_VERSION}, the framework's classes) checked under "
        f"transformers {installed_version('transformers')} with its classes: "
        + ", ".join(f"{counts[status]} {status.replace('_', ' ')}" for status in
                    ("changed", "probe_only", "renamed", "version_only") if counts[status])
        + f" (changed: another model, {len(ANOTHER_MODEL)} named in tests/cli/test_bundled_snapshots.py)"))
