"""Issue #21: migrate, snapshot, then train with nemo-automodel's own recipe class, guarded.

A tiny LLaVA recipe in the legacy vocabulary (``recipes/tiny_llava_legacy.yaml``), with the
projector at 10x by a regex, is copied into a repository, migrated by `mmfreeze migrate` (the
rate is then named by role, and the recipe needs the integration: nemo-automodel 0.7.0 alone
rejects it), snapshotted by `mmfreeze snapshot --update`, and trained by
``FinetuneRecipeForVLM`` on CPU, 2 ranks on gloo, FSDP2, the framework's AdamW, 2 steps, launched
with ``mmfreeze train -- python train_worker.py ...``. The worker replaces two ``torch.cuda``
calls the recipe makes without checking for a GPU and the dataset/processor (they download), and
nothing else (``train_worker.py``).

Issue #41: the same tiny LLaVA distilled by ``KnowledgeDistillationRecipeForVLM`` on separate
meshes (``recipes/tiny_llava_kd_legacy.yaml``): ranks 0-1 train the student, rank 2 serves the
teacher and never steps an optimizer. Three ranks show the student's additions applied, because
the framework does not shard a model on a one-rank mesh, where the student's per-modality sharding
acts (that case is refused when the section is parsed: ``tests/nemo/test_distributed_hook.py``);
two ranks, one per mesh and without additions, show a mismatch stopping the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import cli
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, pytest.mark.slow, requires_framework]

HERE = Path(__file__).resolve().parent
WORKER = HERE / "train_worker.py"
RECIPE = Path("recipes/tiny_llava.yaml")
DISTILLATION = Path("recipes/tiny_llava_kd.yaml")
DISTILLATION_TWO_RANKS = Path("recipes/tiny_llava_kd_two_ranks.yaml")
"""The same distillation on 2 ranks, one per mesh: the student's mesh is one rank, which the framework
does not shard, so it has no mmfreeze additions (they would be refused)."""
NO_DUMMY_FORWARD = Path("recipes/tiny_llava_no_dummy_forward.yaml")
"""The same recipe with mmfreeze's dummy forward for the vision path turned off, which its setup
check allows only when the batch contract says every rank runs vision in the same steps."""
VISION_TOWER = "model.vision_tower."
PROJECTOR = "model.multi_modal_projector."
GUARD_LINE = "mmfreeze guard: rank {rank} of 2: recipes/tiny_llava.yaml matches its snapshot"
GRADIENTS_LINE = "every trainable parameter got a gradient)"


@dataclass(frozen=True)
class Run:
    code: int
    result: dict[str, Any]
    logs: dict[int, str]

    def rank(self, rank: int) -> dict[str, Any]:
        return self.result["ranks"][str(rank)]


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A team repository holding the migrated, snapshotted recipe."""
    root = tmp_path_factory.mktemp("team")
    # The tiny model lives outside the team's repository: a setting names its folder in words.
    (root / "pyproject.toml").write_text(
        f'[tool.mmfreeze]\nsnapshots = "snapshots"\n[tool.mmfreeze.model_folders]\ntest_models = "{HERE / "models"}"\n')
    (root / RECIPE).parent.mkdir()
    for recipe, template in ((RECIPE, "tiny_llava_legacy.yaml"), (DISTILLATION, "tiny_llava_kd_legacy.yaml")):
        text = (HERE / "recipes" / template).read_text()
        (root / recipe).write_text(text.replace("MODEL_DIR", str(HERE / "models" / "tiny-llava")))
    two_ranks = (root / DISTILLATION).read_text().replace("global_batch_size: 4   # 2 per student rank",
                                                         "global_batch_size: 2").replace("dp_size: 2", "dp_size: 1").replace(
        "torch_dtype: float32", "torch_dtype: bfloat16")  # unsharded, the image features reach the projector as bf16
    (root / DISTILLATION_TWO_RANKS).write_text(re.sub(r"    vision:\n      frozen_sharding: replicate[^\n]*\n", "", two_ranks))
    (root / NO_DUMMY_FORWARD).write_text((root / RECIPE).read_text().replace(
        "      frozen_sharding: replicate", "      frozen_sharding: replicate\n      run_dummy_forward: false").replace(
        "  multimodal:\n", "  multimodal:\n    batch_contract: {rank_uniform: [vision]}   # no rank ever runs vision\n"))
    previous = Path.cwd()
    os.chdir(root)
    try:
        migrated = CliRunner().invoke(cli, ["migrate", "recipes"])
        assert migrated.exit_code == 0, migrated.output
        snapshotted = CliRunner().invoke(cli, ["snapshot", "--update", "recipes"])
        assert snapshotted.exit_code == 0, snapshotted.output
    finally:
        os.chdir(previous)
    return root


def train(repository: Path, tmp_path: Path, *extra: str, text_only: bool = False, recipe: Path = RECIPE,
          world: int = 2) -> Run:
    out = tmp_path / "run.json"
    command = [sys.executable, "-m", "mmfreeze", "train", "--",
               sys.executable, str(WORKER), str(recipe), str(out), "--world", str(world), *extra]
    environment = {**os.environ, "PYTHONPATH": str(HERE.parents[1]), "TRAIN_WORKER_DEADLINE_S": "240",
                   "TRAIN_WORKER_TEXT_ONLY": "1" if text_only else "0"}
    completed = subprocess.run(command, cwd=repository, env=environment, capture_output=True, text=True, timeout=400)
    assert out.exists(), completed.stdout + completed.stderr
    logs = {rank: Path(f"{out}.rank{rank}.log").read_text() for rank in range(world)}
    return Run(code=completed.returncode, result=json.loads(out.read_text()), logs=logs)


def test_the_migrated_recipe_needs_the_integration_only_for_its_per_modality_sharding(repository: Path) -> None:
    """Its trainability is compiled into 0.7's own sections; 0.7 has one `frozen_sharding` for every tower."""
    from mmfreeze.distributed.native import native_support
    from mmfreeze.recipes.recipe import read_yaml

    document = read_yaml(repository / RECIPE)
    assert document["mmfreeze"]["freeze_config"] == {"vision": {"tower": True, "projector": False}, "language_model": False}
    assert document["mmfreeze"]["param_group_overrides"] == [{"role": "vision.projector", "lr_mult": 10.0}]
    assert document["freeze_config"] == {"freeze_modules": [{"path": "model.vision_tower"}]}
    assert document["optimizer"]["param_group_overrides"] == [{"pattern": r"^model\.multi_modal_projector\.", "lr_mult": 10.0}]
    assert native_support(document).keys == ("distributed.multimodal.vision.frozen_sharding",)


def test_a_migrated_recipe_trains_through_the_framework_with_the_guard_and_its_additions(
    repository: Path, tmp_path: Path
) -> None:
    run = train(repository, tmp_path)
    assert run.code == 0, run.logs
    for rank in (0, 1):
        record = run.rank(rank)
        assert record["error"] is None, record["traceback"]
        params = record["params"]
        frozen = [name for name, p in params.items() if not p["requires_grad"]]
        trainable = [name for name, p in params.items() if p["requires_grad"]]
        # the snapshot's set: the vision tower frozen, everything else trains
        assert frozen and all(name.startswith(VISION_TOWER) for name in frozen)
        assert not any(name.startswith(VISION_TOWER) for name in trainable)
        assert all(params[name]["unchanged"] for name in frozen)
        assert not any(params[name]["unchanged"] for name in trainable)
        assert not any(params[name]["in_optimizer"] for name in frozen)
        # every point where the framework applied its policy left the same trainable count
        policy = [call for call in record["trainability_calls"] if call["call"] == "_apply_trainability_policy"]
        assert [call["strict"] for call in policy] == [True, False, False]
        assert {call["trainable_after"] for call in policy} == {len(trainable)}
        # the addition: frozen_sharding replicate for vision (0.7's own key says root: DTensors)
        assert {params[name]["kind"] for name in frozen} == {"Tensor"}
        assert {params[name]["kind"] for name in trainable} == {"DTensor"}
        assert GUARD_LINE.format(rank=rank) in run.logs[rank] and GRADIENTS_LINE in run.logs[rank]
        assert len(record["losses"]) == 2
        # the rate named by role: the projector's group at 10x, read by the framework's scheduler
        projector = [name for name in trainable if name.startswith(PROJECTOR)]
        assert projector and {params[name]["lr_mult"] for name in projector} == {10.0}
        assert {params[name]["lr_mult"] for name in trainable if name not in projector} == {1.0}
        rates = {params[name]["lr"] for name in projector}, {params[name]["lr"] for name in trainable} - {
            params[name]["lr"] for name in projector}
        assert len(rates[0]) == len(rates[1]) == 1 and rates[0].pop() == pytest.approx(10 * rates[1].pop())


def test_the_guard_stops_a_run_whose_model_changed_after_setup_on_both_ranks(repository: Path, tmp_path: Path) -> None:
    run = train(repository, tmp_path, "--unfreeze", "model.vision_tower.post_layernorm.weight")
    assert run.code != 0
    for rank in (0, 1):
        record = run.rank(rank)
        assert record["error"].startswith("FrozenSetMismatchError"), record["error"]
        assert record["losses"] == []  # stopped before the first optimizer step
        assert record["error"].startswith(f"FrozenSetMismatchError: {RECIPE}: ")
        assert "model.vision_tower.post_layernorm.weight" in record["error"]
        assert "ranks that disagree: 0" in record["error"]


def test_with_text_only_batches_the_dummy_forward_reaches_the_projector_and_without_it_the_guard_stops(
    repository: Path, tmp_path: Path
) -> None:
    """Issue 25, item 4 (`mmfreeze: {gradients: true}` in the recipe): text-only batches never run
    the image path, so the trainable projector gets a gradient only through mmfreeze's dummy
    forward (on by default); with it off, the guard stops both ranks before the first step and
    names the projector."""
    with_dummy = train(repository, tmp_path / "with", text_only=True)
    assert with_dummy.code == 0, with_dummy.logs
    assert all(GRADIENTS_LINE in with_dummy.logs[rank] for rank in (0, 1))
    without = train(repository, tmp_path / "without", text_only=True, recipe=NO_DUMMY_FORWARD)
    assert without.code != 0
    for rank in (0, 1):
        record = without.rank(rank)
        assert record["error"].startswith(f"FrozenSetMismatchError: {NO_DUMMY_FORWARD}: "), record["error"]
        assert record["losses"] == []
        assert "trainable, but no gradient after the backward (the loss never reached them)" in record["error"]
        assert f"{PROJECTOR}linear_1.weight" in record["error"]


def test_distillation_on_separate_meshes_guards_the_student_with_its_additions_and_finds_the_teacher_frozen_whole(
    repository: Path, tmp_path: Path
) -> None:
    run = train(repository, tmp_path, recipe=DISTILLATION, world=3)
    assert run.code == 0, run.logs
    for rank in (0, 1):
        record = run.rank(rank)
        assert record["error"] is None, record["traceback"]
        assert (record["recipe_class"], record["role"]) == ("KnowledgeDistillationRecipeForVLM", "student")
        params = record["params"]
        frozen = [name for name, p in params.items() if not p["requires_grad"]]
        assert frozen and all(name.startswith(VISION_TOWER) for name in frozen)
        assert all(params[name]["unchanged"] for name in frozen)
        assert not any(p["unchanged"] for p in params.values() if p["requires_grad"])
        # the student's addition: its frozen vision tower replicated, the rest sharded over ranks 0-1
        assert {params[name]["kind"] for name in frozen} == {"Tensor"}
        assert {p["kind"] for p in params.values() if p["requires_grad"]} == {"DTensor"}
        assert "DP_SHARD=2" in record["strategy"]["mesh"]
        assert len(record["losses"]) == 2
        # compared with the student's other rank only: rank 2 never steps an optimizer
        assert f"mmfreeze guard: rank {rank} of 3: {DISTILLATION} matches its snapshot" in run.logs[rank]
    teacher = run.rank(2)
    assert teacher["error"] is None, teacher["traceback"]
    assert teacher["role"] == "teacher" and teacher["losses"] == []
    assert not any(p["requires_grad"] for p in teacher["params"].values())
    assert ("mmfreeze guard: rank 2 of 3 stepped no optimizer; LlavaForConditionalGeneration ran here, frozen whole "
            "(64 tensors): this rank trained nothing") in run.logs[2]


def test_the_guard_stops_a_two_rank_distillation_on_separate_meshes_whose_student_changed_after_setup(
    repository: Path, tmp_path: Path
) -> None:
    """Rank 0 trains the student, rank 1 serves the teacher. Rank 0 unfreezes one of the student's
    tower weights: it stops before its first step, and the student's loop, on its way out, tells
    the teacher's rank to stop serving."""
    run = train(repository, tmp_path, "--unfreeze", "model.vision_tower.post_layernorm.weight",
                recipe=DISTILLATION_TWO_RANKS)
    assert run.code != 0
    student, teacher = run.rank(0), run.rank(1)
    assert student["error"].startswith(f"FrozenSetMismatchError: {DISTILLATION_TWO_RANKS}: "), student["error"]
    assert student["losses"] == [] and "model.vision_tower.post_layernorm.weight" in student["error"]
    assert teacher["role"] == "teacher" and teacher["stage"] == "done" and teacher["losses"] == []
    assert "stepped no optimizer" in run.logs[1]
