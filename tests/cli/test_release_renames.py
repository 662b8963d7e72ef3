"""Issue 24: a snapshot made under the other transformers release is compared through the renames.

The two releases mmfreeze supports, 5.18.0 (nemo-automodel 0.7.0's pin, `.ci/framework_env`) and
the test environment's (``MAIN_TRANSFORMERS``), name the Qwen-Omni thinkers' towers differently.
Each environment checks the snapshots of the bundled recipes that the *other* one made with the
transformers classes, kept as fixtures beside the committed snapshots (which are the framework's
classes' under 5.18.0, where the recipes train):

- under 5.18.0, ``tests/snapshots/fixtures/transformers-<MAIN_TRANSFORMERS>/`` (made by
  ``.venv/bin/mmfreeze snapshot --update --builder transformers --snapshot-dir
  tests/snapshots/fixtures/transformers-<MAIN_TRANSFORMERS> example_configs``);
- under the main release, ``tests/snapshots/fixtures/transformers-5.18.0/`` (made the same way
  with ``.venv-framework/bin/mmfreeze``).

Both directions give the same outcomes: the Omni thinker recipes "renamed" with their exact tensor
counts, two recipes "probe only", where 5.18's model code raises on a mix the later release probes
(:data:`PROBE_CHANGES`), every other recipe "version only". Marked `framework` so that
`.ci/framework_env` runs it under 5.18.0; it needs nemo-automodel only through that environment.
"""

from __future__ import annotations

import fcntl
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.models.probe.run import SHRUNKEN
from mmfreeze.versions import installed_version
from tests.cli.test_snapshot import run
from tests.conftest import MAIN_TRANSFORMERS, REPO_ROOT, run_cache
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.slow, pytest.mark.framework]

INSTALLED = installed_version("transformers")
FIXTURE_518 = Path("tests/snapshots/fixtures/transformers-5.18.0")
FIXTURE_MAIN = Path(f"tests/snapshots/fixtures/transformers-{MAIN_TRANSFORMERS}")
OTHER_RELEASE_SNAPSHOTS = {MAIN_TRANSFORMERS: FIXTURE_518, "5.18.0": FIXTURE_MAIN}
"""Installed release -> the snapshot folder the other supported release made."""
OMNI_25 = "example_configs/audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_librispeech.yaml"
RENAMED = {
    OMNI_25: {"audio_tower": 489, "language_model": 338, "visual": 518},
    "example_configs/audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_av_mix.yaml":
        {"audio_tower": 489, "language_model": 338, "visual": 518},
    "example_configs/audio_finetune/qwen3_omni_moe/qwen3_omni_30b_a3b_common_voice_ep.yaml":
        {"audio_tower": 525, "language_model": 530, "visual": 351},
}
"""Recipe -> tensors renamed per thinker part: from 5.24 on, the names nest under ``thinker.model``."""
PROBE_CHANGES = {
    "example_configs/vlm_peft/kimi_k25/kimi_k25_lora_docvqa.yaml": {"text+video": ("not probed", SHRUNKEN)},
    "example_configs/vlm_finetune/minimax_m3/minimax_m3_vl_medpix_ep32.yaml": {"text+image": ("not probed", SHRUNKEN)},
}
"""Recipe -> mix -> (how 5.18.0 probes it, how the test environment's release does), where 5.18.0's
model code raises: its ``Kimi_K25Model`` splits a clip's pooled features by the patch count before
the temporal pooling, so a clip of more than one frame never matches; its
``MiniMaxM3VLMultiModalProjector`` takes another patch layout than the later releases', which
mmfreeze's MiniMax-M3 image batch follows (a matmul shape error there: mmfreeze's batch, not the
model). 5.24.0's Llama-4 and Gemma-4 drafter forwards raised; 5.25.0's run, as 5.18.0's do."""
RENAMES_FROM_518 = {"audio_tower": ("thinker.audio_tower.*", "thinker.model.audio_tower.*"),
                      "language_model": ("thinker.model.*", "thinker.model.language_model.*"),
                      "visual": ("thinker.visual.*", "thinker.model.visual.*")}


@pytest.fixture
def whole_corpus_turn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One whole-corpus check of the transformers classes at a time across the run's xdist workers: the
    second builds nothing, it reads the run's cache the first filled (cold, both built every model)."""
    lock = run_cache(tmp_path_factory) / "whole-corpus-transformers.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def other_release_snapshots() -> Path:
    if INSTALLED not in OTHER_RELEASE_SNAPSHOTS:
        pytest.fail(f"transformers {INSTALLED} is neither supported release ({', '.join(OTHER_RELEASE_SNAPSHOTS)})")
    return OTHER_RELEASE_SNAPSHOTS[INSTALLED]


def expected_groups(counts: dict[str, int]) -> list[tuple[str, str, int]]:
    """(stored, current, tensors) per part, in the direction this environment checks."""
    groups = []
    for part, tensors in counts.items():
        old, new = RENAMES_FROM_518[part]
        groups.append((old, new, tensors) if INSTALLED == MAIN_TRANSFORMERS else (new, old, tensors))
    return sorted(groups)


def check(
    root: Path, snapshot_dir: Path, recipes: list[str], report: Path, builder: str = "transformers"
) -> tuple[int, dict]:
    result = run(root, "--check", "--builder", builder, "--snapshot-dir", str(snapshot_dir),
                 "--report", "json", "--report-file", str(report), *recipes)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(report.read_text())


def test_the_other_releases_snapshots_are_renamed_for_the_omni_thinkers_probe_only_where_one_release_cannot_probe_and_version_only_for_the_rest(
    tmp_path: Path, whole_corpus_turn: None,
) -> None:
    snapshot_dir = other_release_snapshots()
    recipes = sorted(path.relative_to(REPO_ROOT / snapshot_dir).as_posix().removesuffix(".frozen.txt")
                     for path in (REPO_ROOT / snapshot_dir).rglob("*.frozen.txt"))
    status, report = check(REPO_ROOT, snapshot_dir, recipes, tmp_path / "report.json")
    assert status == ExitCode.PROBE_ONLY, report["summary"]
    outcomes = {outcome["recipe"]: outcome for outcome in report["recipes"]}
    assert len(outcomes) == len(recipes) >= 80
    statuses = {recipe: outcome["status"] for recipe, outcome in outcomes.items()}
    assert {recipe for recipe, status in statuses.items() if status == "renamed"} == set(RENAMED)
    assert {recipe for recipe, status in statuses.items() if status == "probe_only"} == set(PROBE_CHANGES)
    assert set(statuses) - set(RENAMED) - set(PROBE_CHANGES) == \
        {recipe for recipe, status in statuses.items() if status == "version_only"}
    for recipe, counts in RENAMED.items():
        change = outcomes[recipe]["change"]
        assert [(g["stored"], g["current"], g["tensors"]) for g in change["renamed"]] == expected_groups(counts)
        assert all("conversion mapping" in group["mapping"] for group in change["renamed"])
        moved = ("newly_frozen", "newly_trainable", "adapters_added", "adapters_removed", "unmapped", "reach_changes")
        assert all(change[field] == [] for field in moved), recipe
        assert [h["field"] for h in change["header_changes"]] == ["transformers"]
    for recipe, probes in PROBE_CHANGES.items():
        change = outcomes[recipe]["change"]
        directed = {mix: (old, new) if INSTALLED == MAIN_TRANSFORMERS else (new, old)
                    for mix, (old, new) in probes.items()}
        assert [{k: v for k, v in reach.items() if k != "why"} for reach in change["reach_changes"]] == [
            {"mix": mix, "probe": f"{stored} -> {current}", "newly_reached": [], "newly_unreachable": []}
            for mix, (stored, current) in directed.items()]
        assert all(bool(reach["why"]) == reach["probe"].endswith("-> not probed") for reach in change["reach_changes"])
        assert all(change[field] == [] for field in ("newly_frozen", "newly_trainable", "renamed", "unmapped"))


PLANTED = "example_configs/vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2.yaml"
PLANTED_SOURCE = ("    vision: {tower: true, projector: true}", "    vision: {tower: true, projector: false}")


def test_the_markdown_report_of_a_release_switch_leads_with_the_one_real_change_and_stays_under_10_kb(
    tmp_path: Path, whole_corpus_turn: None,
) -> None:
    """The other release's snapshots of the whole corpus, one recipe's projector unfrozen (and
    compiled again, as `migrate` would): the real change is the first row, each kind of release
    difference is one line with its count, and the advice accepts the release differences alone."""
    shutil.copytree(REPO_ROOT / "example_configs", tmp_path / "example_configs")
    shutil.copytree(REPO_ROOT / other_release_snapshots(), tmp_path / "snapshots")
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    recipe = tmp_path / PLANTED
    recipe.write_text(recipe.read_text().replace(*PLANTED_SOURCE).replace(
        "    - {path: model.visual}\n", "    - {path: model.visual.patch_embed}\n    - {path: model.visual.blocks}\n"))

    result = run(tmp_path, "--check", "--builder", "transformers", "--report", "markdown", "--report-file",
                 str(tmp_path / "report.md"), "example_configs")
    assert result.returncode == ExitCode.CHANGED, result.stderr
    report = (tmp_path / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| `example_configs/")]
    assert rows == [f"| `{PLANTED}` | changed | 0 tensors / 0 parameters | 5 tensors / 44.6M parameters | native |"]
    assert len(report.encode()) < 10_000, len(report.encode())
    counts = {status: len(report.split(f"{status}**")) - 1 for status in ("version only", "renamed", "probe only")}
    assert counts == {"version only": 1, "renamed": 1, "probe only": 1}
    assert f"**{len(RENAMED)} renamed**" in report and f"**{len(PROBE_CHANGES)} probe only**" in report
    assert "`mmfreeze snapshot --accept-release PATHS`" in report


def test_a_real_change_under_the_release_switch_is_changed_under_both_names_beside_the_renames(
    tmp_path: Path,
) -> None:
    """One module unfrozen in one Omni recipe (the vision tower): changed, shown under the current
    names with the stored ones beside them, and the renames still reported as renames. The source
    and its compiled section are edited together, as `mmfreeze migrate` compiles the new source in
    `.ci/framework_env` (the tower's merger alone stays frozen): the check holds the two to each
    other in every environment."""
    snapshot_dir = other_release_snapshots()
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    recipe = tmp_path / OMNI_25
    recipe.parent.mkdir(parents=True)
    text = (REPO_ROOT / OMNI_25).read_text()
    edits = (("vision: {tower: true, projector: true}", "vision: {tower: false, projector: true}"),
             ("    - {path: visual}\n", "    - {path: visual.merger}\n"))
    for before, after in edits:
        assert text.count(before) == 1, f"the bundled recipe moved: update this test ({before!r})"
        text = text.replace(before, after)
    recipe.write_text(text)
    stored = tmp_path / "snapshots" / f"{OMNI_25}.frozen.txt"
    stored.parent.mkdir(parents=True)
    shutil.copy(REPO_ROOT / snapshot_dir / f"{OMNI_25}.frozen.txt", stored)

    status, report = check(tmp_path, Path("snapshots"), [OMNI_25], tmp_path / "report.json")
    assert status == ExitCode.CHANGED
    [outcome] = report["recipes"]
    change = outcome["change"]
    assert outcome["status"] == "changed" and change["newly_frozen"] == []
    [tower] = change["newly_trainable"]
    assert tower["label"].endswith("(vision tower)") and tower["tensors"] > 500
    current_prefix, stored_prefix = "thinker.model.visual.", "thinker.visual."
    if INSTALLED != MAIN_TRANSFORMERS:
        current_prefix, stored_prefix = stored_prefix, current_prefix
    assert all(name.startswith(current_prefix) for name in tower["names"])
    assert {change["stored_names"][name] for name in tower["names"]} == \
        {stored_prefix + name.removeprefix(current_prefix) for name in tower["names"]}
    assert [(g["stored"], g["current"], g["tensors"]) for g in change["renamed"]] == expected_groups(RENAMED[OMNI_25])

    text_report = run(tmp_path, "--check", "--builder", "transformers", OMNI_25).stdout
    assert "  newly trainable: " in text_report and "      stored as:" in text_report
    assert f"        {stored_prefix}blocks.{{0..31}}.attn.proj.bias" in text_report
    assert "  renamed: 1,345 tensors" in text_report


def test_update_writes_the_current_releases_names(tmp_path: Path) -> None:
    snapshot_dir = other_release_snapshots()
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    (tmp_path / OMNI_25).parent.mkdir(parents=True)
    shutil.copy(REPO_ROOT / OMNI_25, tmp_path / OMNI_25)
    stored = tmp_path / "snapshots" / f"{OMNI_25}.frozen.txt"
    stored.parent.mkdir(parents=True)
    shutil.copy(REPO_ROOT / snapshot_dir / f"{OMNI_25}.frozen.txt", stored)

    assert run(tmp_path, "--update", "--builder", "transformers", OMNI_25).returncode == ExitCode.OK
    assert f"transformers: {INSTALLED}" in stored.read_text()
    assert run(tmp_path, "--check", "--builder", "transformers", OMNI_25).returncode == ExitCode.OK
    names = [line for line in stored.read_text().split("\n---\n", 1)[1].splitlines() if line.startswith("thinker.")]
    visual = "thinker.model.visual." if INSTALLED == MAIN_TRANSFORMERS else "thinker.visual."
    assert any(name.startswith(visual) for name in names)


QWEN3_VL_MOE = "example_configs/vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_medpix.yaml"
"""Beside a later transformers the framework's own Qwen3-VL-MoE does not import (it needs its pin), so the framework,
and mmfreeze with it, builds the transformers class there: this test runs in `.ci/framework_env`."""
GEMMA3 = "example_configs/vlm_finetune/gemma3/gemma3_4b_cord_v2.yaml"


@requires_framework
def test_the_frameworks_own_classes_read_a_transformers_snapshot_through_their_state_dict_adapter(
    tmp_path: Path,
) -> None:
    """The main release's fixture holds the transformers classes' snapshots. The framework's Qwen3-VL-MoE names its
    experts ``down_projs`` / ``gate_and_up_projs``; its state-dict adapter writes them as the
    checkpoint's ``down_proj`` / ``gate_up_proj``, so the builder switch reads them as renames. Its
    image mix cannot be probed without weights (the framework's class reaches for CUDA when it is
    built again, small or fake), where the transformers class's was: the recipe differs by that
    probe alone, and says why. Since issue 48 a snapshot of another class is its own outcome,
    "built by another class" (exit 10: `--accept-release` must not write it), whatever the renames
    explain; the change still carries them. Gemma 3, built by the framework as transformers'
    class, differs in the header's builder alone."""
    status, report = check(REPO_ROOT, FIXTURE_MAIN, [QWEN3_VL_MOE, GEMMA3], tmp_path / "report.json",
                           builder="framework")
    outcomes = {outcome["recipe"]: outcome for outcome in report["recipes"]}
    assert status == ExitCode.BUILDER_SWITCH, report["summary"]
    moe = outcomes[QWEN3_VL_MOE]["change"]
    assert outcomes[QWEN3_VL_MOE]["status"] == "builder_switch"
    assert outcomes[QWEN3_VL_MOE]["message"] == (
        "snapshot: Qwen3VLMoeForConditionalGeneration by transformers 5.25.0; here: "
        "Qwen3VLMoeForConditionalGeneration by nemo-automodel 0.7.0 (transformers 5.18.0)")
    [reach] = moe["reach_changes"]
    assert {key: value for key, value in reach.items() if key != "why"} == {
        "mix": "text+image", "probe": "forward of a shrunken config (every depth kept) on the CPU -> not probed",
        "newly_reached": [], "newly_unreachable": []}
    assert reach["why"], "the report says why the mix is not probed now"
    assert all(moe[field] == [] for field in ("newly_frozen", "newly_trainable", "unmapped"))
    assert [(g["stored"], g["current"], g["tensors"], g["mapping"]) for g in moe["renamed"]] == [
        ("model.language_model.layers.#.mlp.experts.down_proj", "model.language_model.layers.#.mlp.experts.down_projs",
         48, "nemo-automodel 0.7.0 Qwen3VLMoeStateDictAdapter"),
        ("model.language_model.layers.#.mlp.experts.gate_up_proj",
         "model.language_model.layers.#.mlp.experts.gate_and_up_projs", 48, "nemo-automodel 0.7.0 Qwen3VLMoeStateDictAdapter"),
    ]
    assert {h["field"] for h in moe["header_changes"]} >= {"builder", "divergence"}
    assert outcomes[GEMMA3]["status"] == "version_only"
