"""Issue 39, "a real launch": a migrated bundled recipe trains on the stock framework's own entry point.

The bundled LLaVA recipe (:data:`BUNDLED`, the one whose model target nemo-automodel 0.7.0's VLM
recipe accepts) runs, 2 ranks on gloo on CPU, as

    torchrun --standalone --nproc-per-node 2 -m nemo_automodel.cli.app recipe.yaml

with the recipe's own ``recipe:`` key and ``freeze_config`` section, equal (as YAML values) to the
bundled file's, and nothing of mmfreeze in the training processes. Only what cannot run offline on
CPU is replaced (:func:`derive_recipe`): the hub model by a tiny local LLaVA with the same
architecture (``models/tiny-llava``, weights written here), the data set, processor and
collator by the in-memory ones of ``stock_launch/stock_launch_data.py``, NCCL by gloo, the
batch sizes and step count, the checkpoint directory (an environment variable) and checkpointing
itself (off), and the learning rate (:data:`LR`; the bundled sweep says its sweep tool sets it).
(The bundled input sections would not pass 0.7.0 anyway: ``dataset.limit_dataset_samples`` is a
``TypeError`` in ``components/datasets/loader.py``, ``make_dataset_config``, and
``dataloader.batch_size`` one in ``recipes/_typed_config.py``, ``resolve_vlm_dataloader``.)

``stock_launch/`` is the subprocess's only ``PYTHONPATH`` entry. Its ``sitecustomize.py`` runs in
every torchrun worker and installs ``stock_launch_probe.py``: the two ``torch.cuda`` stubs the
framework needs on CPU (those of ``train_worker.py`` ``cpu_substitutions``), and torch's public
process-wide optimizer step hooks, which record each parameter's ``requires_grad`` and a hash of
its full (gathered) value before the first step and after every step, plus whether any
``mmfreeze`` module is loaded (at start-up, when the dataset is built, at every step and at exit).

The frozen set expected is computed here from the recipe's native ``freeze_config`` alone, with
0.7.0's selector rules (``components/utils/model_utils.py``: whole module subtrees, ``path``
exact, ``glob`` by ``fnmatchcase``, ``unfreeze_modules`` wins); the framework's ``requires_grad``
must equal it, frozen parameters must be bitwise unchanged and trainable ones changed.

``MMFREEZE_STOCK_LAUNCH_RECIPE=<path>`` runs the same test on another LLaVA recipe file.
"""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, pytest.mark.slow, requires_framework]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STOCK = HERE / "stock_launch"
TINY_LLAVA = HERE / "models" / "tiny-llava"
BUNDLED = REPO / "example_configs" / "vlm_finetune" / "llava" / "llava_1_5_cauldron_sweep.yaml"
SOURCE = Path(os.environ.get("MMFREEZE_STOCK_LAUNCH_RECIPE") or BUNDLED)
WORLD = 2
STEPS = 3
DEADLINE_S = 240.0
NATIVE_KEYS = {"freeze_modules", "unfreeze_modules", "freeze_vision_tower", "freeze_audio_tower",
               "freeze_language_model", "freeze_video_embedder"}
"""The six keys nemo-automodel 0.7.0's ``parse_freeze_config`` accepts."""
LR = 1.0e-2
"""The recipe's ``torch_dtype`` is bfloat16 and its optimizer ``torch.optim.AdamW``: parameters and
updates stay bf16 (0.7.0 warns, ``components/optim/precision_warnings.py:56``), so at the file's
2e-5 an element above ~256 * lr = 5e-3 in magnitude never moves (measured: the RMSNorm weights,
1.0, stayed bitwise equal after 3 steps) and a trainable parameter could not be told from a frozen
one by its value. Adam's first steps move every element with a gradient by about ``lr``; 1e-2 is
above half a bf16 ulp of anything below 2 in magnitude."""
STUBBED = {"torch.cuda.current_device", "torch.cuda.reset_peak_memory_stats"}


# --------------------------------------------------------------------------------------------
# The recipe: the bundled file's own `recipe:` and `freeze_config`, the rest made to run offline.
# --------------------------------------------------------------------------------------------

def native_selectors(freeze_config: Any) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """``(freeze_modules, unfreeze_modules)`` of a section stock 0.7.0 accepts; an assertion error
    names what is not native (mmfreeze's ``(modality, role)`` vocabulary, legacy flags turned on,
    no selector at all, which turns the implicit ``freeze_vision_tower`` on)."""
    assert isinstance(freeze_config, dict) and freeze_config, f"no freeze_config section: {freeze_config!r}"
    foreign = sorted(set(freeze_config) - NATIVE_KEYS)
    assert not foreign, f"freeze_config is not in nemo-automodel 0.7.0's vocabulary: keys {foreign}"
    legacy_on = sorted(k for k in NATIVE_KEYS - {"freeze_modules", "unfreeze_modules"} if freeze_config.get(k))
    assert not legacy_on, f"legacy substring flags turned on (inexact by design): {legacy_on}"
    assert {"freeze_modules", "unfreeze_modules"} & set(freeze_config), (
        "no freeze_modules/unfreeze_modules: 0.7.0 then freezes the vision tower implicitly")
    lists = []
    for key in ("freeze_modules", "unfreeze_modules"):
        entries = freeze_config.get(key) or []
        assert isinstance(entries, list), f"{key} must be a list: {entries!r}"
        for entry in entries:
            assert isinstance(entry, dict) and len(entry) == 1 and set(entry) <= {"path", "glob"}, (
                f"{key} entry must be exactly one of {{path: X}} / {{glob: X}}: {entry!r}")
        lists.append(entries)
    return lists[0], lists[1]


def expected_frozen(names: list[str], freeze_config: dict[str, Any]) -> set[str]:
    """The parameters 0.7.0's ``apply_parameter_freezing`` freezes under a native section, computed
    from the names alone: a selector selects every parameter under a matching (non-root) module."""
    freeze, unfreeze = native_selectors(freeze_config)

    def modules(name: str) -> list[str]:
        canonical = name.replace("_checkpoint_wrapped_module.", "").replace("_orig_mod.", "")
        parts = canonical.split(".")
        return [".".join(parts[:i]) for i in range(1, len(parts))]

    def selected(name: str, entries: list[dict[str, str]]) -> bool:
        return any(module == entry["path"] if "path" in entry else fnmatch.fnmatchcase(module, entry["glob"])
                   for entry in entries for module in modules(name))

    return {name for name in names if selected(name, freeze) and not selected(name, unfreeze)}


def tiny_llava_spec() -> dict[str, Any]:
    """What a synthetic LLaVA batch needs, from ``models/tiny-llava/config.json``."""
    config = json.loads((TINY_LLAVA / "config.json").read_text())
    vision = config["vision_config"]
    per_side = vision["image_size"] // vision["patch_size"]
    extra = 1 if config["vision_feature_select_strategy"] == "full" else 0
    image_token_id = config["image_token_index"]
    return {"image_token_id": image_token_id, "image_tokens": per_side * per_side + extra,
            "pixel_shape": [vision["num_channels"], vision["image_size"], vision["image_size"]],
            "text_vocab": min(image_token_id, config["text_config"]["vocab_size"]), "seq_len": 12}


def derive_recipe(source: dict[str, Any], model_dir: Path, scratch: Path) -> dict[str, Any]:
    """The source recipe with only what cannot run offline on CPU replaced (see the module doc)."""
    assert isinstance(source.get("recipe"), (str, dict)) and source["recipe"], (
        "the recipe has no `recipe:` key, which `automodel` / `nemo_automodel.cli.app` require")
    native_selectors(source.get("freeze_config"))
    assert source["model"]["_target_"].startswith("nemo_automodel."), (
        f"0.7.0's VLM recipe refuses model target {source['model']['_target_']!r} (_accepted_targets)")
    spec = tiny_llava_spec()
    recipe = {key: value for key, value in source.items()
              if key not in ("dataset", "dataloader", "processor", "validation_dataset", "validation_dataloader",
                             "packed_sequence", "wandb", "mlflow", "comet")}
    recipe["model"] = {**source["model"], "pretrained_model_name_or_path": str(model_dir)}
    recipe["dist_env"] = {**source.get("dist_env", {}), "backend": "gloo"}
    recipe["step_scheduler"] = {**source.get("step_scheduler", {}), "global_batch_size": 2 * WORLD,
                                "local_batch_size": 2, "max_steps": STEPS, "val_every_steps": None,
                                "ckpt_every_steps": 1000}
    recipe["optimizer"] = {**source["optimizer"], "lr": LR}
    recipe["checkpoint"] = {**source.get("checkpoint", {}), "enabled": False, "checkpoint_dir": str(scratch)}
    recipe["dataset"] = {"_target_": "stock_launch_data.synthetic_llava_dataset", **spec, "size": STEPS * 2 * WORLD}
    recipe["processor"] = {"_target_": "stock_launch_data.no_processor"}
    recipe["dataloader"] = {"_target_": "torchdata.stateful_dataloader.StatefulDataLoader", "shuffle": False,
                            "collate_fn": {"_target_": "stock_launch_data.synthetic_collate",
                                           "text_vocab": spec["text_vocab"]}}
    return recipe


# --------------------------------------------------------------------------------------------
# The launch.
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Launch:
    source: dict[str, Any]
    recipe: dict[str, Any]
    command: list[str]
    code: int | None
    timed_out: bool
    seconds: float
    output: str
    ranks: dict[int, dict[str, Any]]
    scratch: Path


def write_tiny_llava(directory: Path) -> Path:
    """``models/tiny-llava`` with seeded random weights, saved as a local checkpoint."""
    import torch
    from transformers import AutoConfig, LlavaForConditionalGeneration

    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(AutoConfig.from_pretrained(TINY_LLAVA))
    model.save_pretrained(directory)
    return directory


def torchrun() -> list[str]:
    script = Path(sys.executable).parent / "torchrun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory) -> Launch:
    root = tmp_path_factory.mktemp("stock_launch")
    source = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    recipe = derive_recipe(source, write_tiny_llava(root / "tiny-llava"), root / "checkpoints")
    recipe_path = root / SOURCE.name
    recipe_path.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    out = root / "probe"
    command = [*torchrun(), "--standalone", "--nproc-per-node", str(WORLD), "-m", "nemo_automodel.cli.app",
               str(recipe_path)]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PYTEST", "MMFREEZE"))}
    env.update({"PYTHONPATH": str(STOCK), "STOCK_LAUNCH_OUT": str(out), "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
                "CUDA_VISIBLE_DEVICES": ""})
    log_path = root / "torchrun.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=DEADLINE_S)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # torchrun and the two workers it started
            proc.wait()
            timed_out = True
    seconds = round(time.monotonic() - started, 1)
    ranks = {rank: json.loads((out / f"rank{rank}.json").read_text())
             for rank in range(WORLD) if (out / f"rank{rank}.json").exists()}
    return Launch(source=source, recipe=recipe, command=command, code=proc.returncode, timed_out=timed_out,
                  seconds=seconds, output=log_path.read_text(), ranks=ranks, scratch=root / "checkpoints")


# --------------------------------------------------------------------------------------------
# Tests. One launch, checked in one test: under xdist (worksteal) a module fixture shared by
# several tests could run the launch once per worker.
# --------------------------------------------------------------------------------------------

def test_the_bundled_recipe_names_its_recipe_class_and_a_native_freeze_config() -> None:
    """What stock 0.7.0's `automodel` needs from the file itself (no patch, no plug-in)."""
    source = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    assert source.get("recipe"), f"{SOURCE.name}: no `recipe:` key"
    freeze, unfreeze = native_selectors(source.get("freeze_config"))
    assert freeze or unfreeze


def check_the_launch(launch: Launch) -> None:
    """The framework's own entry point ran the file's `recipe:` and `freeze_config`, both ranks
    trained ``STEPS`` steps and exited 0."""
    assert launch.recipe["recipe"] == launch.source["recipe"]
    assert launch.recipe["freeze_config"] == launch.source["freeze_config"]
    assert launch.command[-3:-1] == ["-m", "nemo_automodel.cli.app"]
    assert not launch.timed_out, f"killed after {DEADLINE_S} s:\n{launch.output[-6000:]}"
    assert launch.code == 0, launch.output[-6000:]
    assert sorted(launch.ranks) == list(range(WORLD)), launch.output[-6000:]
    for rank, record in launch.ranks.items():
        assert record["main_module"] == "nemo_automodel.cli.app", rank
        assert record["world_size"] == WORLD, rank
        assert record["steps"] == STEPS, (rank, record["steps"])
        assert record["recipes"] == ["nemo_automodel.recipes.vlm.finetune.FinetuneRecipeForVLM"], rank
        assert record["exit"] is not None, rank  # the process ended through its normal exit
    losses = [json.loads(line)["loss"] for line in (launch.scratch / "training.jsonl").read_text().splitlines()]
    assert len(losses) == STEPS and all(0 < loss < 100 for loss in losses), losses  # the framework's own log


def check_no_mmfreeze(launch: Launch) -> None:
    for rank, record in launch.ranks.items():
        where = [check["where"] for check in record["mmfreeze_checks"]]
        assert where == ["sitecustomize", "dataset build", "before the first optimizer step"], (rank, where)
        assert all(check["loaded"] == [] for check in record["mmfreeze_checks"]), (rank, record["mmfreeze_checks"])
        assert record["mmfreeze_after_step"] == [] and record["exit"]["mmfreeze_loaded"] == [], rank


def check_only_the_two_cuda_calls_are_stubbed(launch: Launch) -> None:
    for rank, record in launch.ranks.items():
        assert {call["call"] for call in record["cuda_substitutions"]} == STUBBED, rank


def check_the_frozen_set(launch: Launch) -> None:
    """``requires_grad`` False exactly on the set the native section names; those parameters
    bitwise unchanged and outside the optimizer, every other one changed; ranks agree."""
    digests = {}
    for rank, record in launch.ranks.items():
        before, after = record["before"], record["after"]
        assert before and after and sorted(before) == sorted(after), rank
        frozen = {name for name, p in before.items() if not p["requires_grad"]}
        trainable = set(before) - frozen
        assert frozen == expected_frozen(sorted(before), launch.source["freeze_config"]), rank
        assert frozen and trainable, rank
        assert {name for name, p in after.items() if not p["requires_grad"]} == frozen, rank
        assert [name for name in frozen if before[name]["in_optimizer"]] == [], rank
        assert [name for name in trainable if not before[name]["in_optimizer"]] == [], rank
        assert [name for name in frozen if before[name]["digest"] != after[name]["digest"]] == [], rank
        assert [name for name in trainable if before[name]["digest"] == after[name]["digest"]] == [], rank
        digests[rank] = {name: (p["digest"], after[name]["digest"]) for name, p in before.items()}
    assert digests[0] == digests[1]  # both ranks hold the same full values, before and after


def test_a_stock_torchrun_launch_trains_exactly_what_the_bundled_freeze_config_says(launch: Launch) -> None:
    check_the_launch(launch)
    check_no_mmfreeze(launch)
    check_only_the_two_cuda_calls_are_stubbed(launch)
    check_the_frozen_set(launch)
