"""Train a tiny VLM with nemo-automodel 0.7.0's own recipe class on CPU: 2 ranks, gloo, FSDP2.

    python tests/nemo/train_worker.py RECIPE.yaml OUT.json [--steps N] [--unfreeze PARAMETER] [--world N]

Without ``RANK`` in the environment this process is the launcher: it starts ``--world`` ranks of
itself (default 2; ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR=127.0.0.1``, ``MASTER_PORT``), waits up
to ``TRAIN_WORKER_DEADLINE_S`` seconds (default 150), kills what is left, merges the ranks'
results into OUT.json and prints a summary (exit 0 only if both ranks finished without error).
With ``RANK`` set (by that launcher, torchrun or any other) the process is one rank: it runs
:func:`build_and_train` and writes ``OUT.json.rank<R>.json`` (:func:`merge_rank_results` merges them).

:func:`build_and_train` is the only part that drives the framework; install ``mmfreeze.nemo``
before it (``mmfreeze train -- python tests/nemo/train_worker.py ...`` does, in every rank) to
train with the integration. It runs ``FinetuneRecipeForVLM(cfg).setup()`` then
``run_train_validation_loop()`` (``nemo_automodel/recipes/vlm/finetune.py``), with the recipe's
dataset, processor and dataloader sections replaced by an in-memory synthetic dataset (the real
ones download data and processors). ``--unfreeze PARAMETER`` makes one frozen parameter trainable
on rank 0 after ``setup()``, before the first step: a model changed after setup.

It runs under :func:`cpu_substitutions`, which replaces two ``torch.cuda`` functions the framework
calls without checking for a GPU (``reset_peak_memory_stats``, ``current_device``; see there);
nothing in the framework is edited.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

from tests.distributed.launch import free_port, wait_all

REPO = Path(__file__).resolve().parents[2]
WORLD = 2
LEGACY_VISION_PATTERNS = ("vision", "visual", "image_encoder")
"""The substrings the framework's ``freeze_vision_tower`` matches (``model_utils.apply_parameter_freezing``)."""


# --------------------------------------------------------------------------------------------
# Synthetic data: same shapes as the framework's VLM collators produce (labels pre-shifted).
# --------------------------------------------------------------------------------------------

def batch_spec(hf_config: Any) -> dict[str, Any]:
    """What a synthetic batch needs to know about the model, from its HF config alone."""
    model_type = hf_config.model_type
    vision = hf_config.vision_config
    text = getattr(hf_config, "text_config", hf_config)
    if model_type == "llava":
        per_side = vision.image_size // vision.patch_size
        image_tokens = per_side * per_side + (1 if hf_config.vision_feature_select_strategy == "full" else 0)
        special = [hf_config.image_token_id]
        return {"kind": "llava", "image_token_id": hf_config.image_token_id, "image_tokens": image_tokens,
                "pixel_shape": [vision.num_channels, vision.image_size, vision.image_size],
                "text_vocab": min(min(special), text.vocab_size), "seq_len": 12}
    if model_type in ("qwen2_vl", "qwen2_5_vl"):
        merge = vision.spatial_merge_size
        grid = [1, merge, merge]  # one merged patch window: one image token
        special = [hf_config.image_token_id, hf_config.video_token_id,
                   hf_config.vision_start_token_id, hf_config.vision_end_token_id]
        return {"kind": "qwen2_vl", "image_token_id": hf_config.image_token_id,
                "vision_start_token_id": hf_config.vision_start_token_id,
                "vision_end_token_id": hf_config.vision_end_token_id, "grid": grid,
                "patch_dim": vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2,
                "text_vocab": min(min(special), text.vocab_size), "seq_len": 12}
    raise ValueError(f"no synthetic batch for model_type={model_type!r} (llava, qwen2_vl, qwen2_5_vl)")


TEXT_ONLY_ENV = "TRAIN_WORKER_TEXT_ONLY"
"""``1``: every example is text only (no image placeholder, no pixels), as a text-only data mix."""


def synthetic_example(spec: dict[str, Any], index: int) -> dict[str, Any]:
    """One seeded example: token ids with an image placeholder run, and its pixels (text only
    under :data:`TEXT_ONLY_ENV`)."""
    import torch

    generator = torch.Generator().manual_seed(1000 + index)
    ids = torch.randint(0, spec["text_vocab"], (spec["seq_len"],), generator=generator)
    if os.environ.get(TEXT_ONLY_ENV) == "1":
        return {"input_ids": ids}
    if spec["kind"] == "llava":
        ids[2:2 + spec["image_tokens"]] = spec["image_token_id"]
        pixels = torch.randn(*spec["pixel_shape"], generator=generator)
    else:
        ids[2:5] = torch.tensor([spec["vision_start_token_id"], spec["image_token_id"], spec["vision_end_token_id"]])
        t, h, w = spec["grid"]
        pixels = torch.randn(t * h * w, spec["patch_dim"], generator=generator)
    return {"input_ids": ids, "pixel_values": pixels}


def synthetic_dataset(spec: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """The recipe path's ``dataset._target_``: an in-memory, sized dataset."""
    return [synthetic_example(spec, i) for i in range(size)]


def no_processor(**_: Any) -> None:
    """The recipe path's ``processor._target_``: no processor (the default downloads one)."""
    return None


def synthetic_collate(examples: list[dict[str, Any]], processor: Any = None, *, spec: dict[str, Any]) -> dict:
    """The recipe path's ``dataloader.collate_fn``: the batch layout of the framework's collators."""
    import torch

    ids = torch.stack([e["input_ids"] for e in examples])
    labels = ids.masked_fill(ids >= spec["text_vocab"], -100)  # no loss on image / vision special tokens
    labels = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], dim=1)  # labels[t] = ids[t+1]
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    if "pixel_values" not in examples[0]:
        return batch
    if spec["kind"] == "llava":
        batch["pixel_values"] = torch.stack([e["pixel_values"] for e in examples])
    else:
        batch["pixel_values"] = torch.cat([e["pixel_values"] for e in examples])
        batch["image_grid_thw"] = torch.tensor([spec["grid"]] * len(examples))
        batch["mm_token_type_ids"] = (ids == spec["image_token_id"]).int()
    return batch


# --------------------------------------------------------------------------------------------
# CPU substitutions and instrumentation (process-local monkeypatches, restored on exit).
# --------------------------------------------------------------------------------------------

def _where(frame) -> str:
    filename = frame.f_code.co_filename
    short = filename.split("site-packages/")[-1] if "site-packages/" in filename else os.path.relpath(filename, REPO)
    return f"{short}:{frame.f_lineno} ({frame.f_code.co_name})"


@contextlib.contextmanager
def cpu_substitutions(log: list[dict[str, Any]]) -> Iterator[None]:
    """Replace the ``torch.cuda`` calls the framework makes without checking for a GPU.

    * ``current_device``: ``auto_model.py`` ``_build_model`` uses it as the model's device
      (meta materialisation and ``model.to(device)``) and gets ``cpu``; every other caller gets
      ``0`` (``from_config`` builds ``torch.device("cuda", 0)`` for the pipeline builder, unused
      without PP).
    * ``reset_peak_memory_stats``: a no-op (the real one raises without a GPU).
    (``max_memory_allocated``, also called, returns 0 without a GPU and is left alone.)
    Each call is appended to ``log`` with its caller.
    """
    import torch

    names = ("current_device", "reset_peak_memory_stats")
    saved = {name: getattr(torch.cuda, name) for name in names}

    def current_device():
        caller = sys._getframe(1)
        value = torch.device("cpu") if caller.f_code.co_name == "_build_model" else 0
        log.append({"call": "torch.cuda.current_device", "caller": _where(caller), "returned": str(value)})
        return value

    def reset_peak_memory_stats(*_: Any, **__: Any) -> None:
        log.append({"call": "torch.cuda.reset_peak_memory_stats", "caller": _where(sys._getframe(1))})

    torch.cuda.current_device = current_device
    torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.cuda, name, function)


@contextlib.contextmanager
def trainability_probe(calls: list[dict[str, Any]]) -> Iterator[None]:
    """Count ``infrastructure._apply_trainability_policy`` / ``parse_freeze_config`` calls.

    Wraps whatever the module globals hold at entry (so it also counts a plug-in's replacement
    installed before), forwarding every argument unchanged."""
    from nemo_automodel._transformers import infrastructure

    policy, parse = infrastructure._apply_trainability_policy, infrastructure.parse_freeze_config

    @functools.wraps(policy)  # keeps attributes a plug-in marks its replacement with
    def counted_policy(model, **kwargs):
        result = policy(model, **kwargs)
        params = list(model.named_parameters())
        calls.append({
            "call": "_apply_trainability_policy", "caller": _where(sys._getframe(1)),
            "strict": kwargs.get("strict"), "peft_enabled": kwargs.get("peft_enabled"),
            "freeze_config": repr(kwargs.get("freeze_config")),
            "trainable_after": sum(p.requires_grad for _, p in params), "params": len(params),
        })
        return result

    @functools.wraps(parse)
    def counted_parse(config):
        result = parse(config)
        calls.append({"call": "parse_freeze_config", "caller": _where(sys._getframe(1)),
                      "input": repr(config), "result": repr(result)})
        return result

    infrastructure._apply_trainability_policy, infrastructure.parse_freeze_config = counted_policy, counted_parse
    try:
        yield
    finally:
        infrastructure._apply_trainability_policy, infrastructure.parse_freeze_config = policy, parse


# --------------------------------------------------------------------------------------------
# Parameter records.
# --------------------------------------------------------------------------------------------

def full_parameters(model) -> dict[str, Any]:
    """Every parameter's full value (``full_tensor()`` gathers DTensors: a collective, all ranks call it)."""
    from torch.distributed.tensor import DTensor

    out = {}
    for name, param in model.named_parameters():
        value = param.detach()
        out[name] = (value.full_tensor() if isinstance(value, DTensor) else value).clone()
    return out


def describe_parameters(model, optimizers) -> dict[str, dict[str, Any]]:
    from torch.distributed.tensor import DTensor

    group_of = {id(p): group for opt in optimizers for group in opt.param_groups for p in group["params"]}
    out = {}
    for name, param in model.named_parameters():
        is_dtensor = isinstance(param, DTensor)
        out[name] = {
            "requires_grad": param.requires_grad,
            "in_optimizer": id(param) in group_of,
            "lr_mult": group_of[id(param)].get("lr_mult", 1.0) if id(param) in group_of else None,
            "lr": group_of[id(param)]["lr"] if id(param) in group_of else None,
            "kind": "DTensor" if is_dtensor else "Tensor",
            "placements": [str(p) for p in param.placements] if is_dtensor else None,
            "dtype": str(param.dtype).replace("torch.", ""),
            "shape": list(param.shape),
            "local_shape": list((param.to_local() if is_dtensor else param).shape),
        }
    return out


def is_vision_tower(name: str) -> bool:
    return any(pattern in name.lower() for pattern in LEGACY_VISION_PATTERNS)


# --------------------------------------------------------------------------------------------
# The framework-driving part.
# --------------------------------------------------------------------------------------------

def load_recipe(recipe_path: str | Path, steps: int, *, scratch_dir: str) -> tuple[Any, dict[str, Any]]:
    """The recipe as the framework's ``ConfigNode``, with the synthetic input pipeline injected.

    ``dataset``/``processor``/``dataloader``/``validation_dataset`` are replaced (the real ones
    download data and processors), ``step_scheduler.max_steps`` is set to ``steps`` and
    ``checkpoint.checkpoint_dir`` (where the recipe also writes its JSONL metric logs) to a scratch
    dir. ``_target_`` values may be Python objects: ``ConfigNode`` resolves only strings."""
    import yaml
    from nemo_automodel.components.config.loader import ConfigNode

    raw = yaml.safe_load(Path(recipe_path).read_text(encoding="utf-8"))
    hf_config = ConfigNode(raw["model"]["config"]).instantiate()
    spec = batch_spec(hf_config)
    scheduler = raw.setdefault("step_scheduler", {})
    scheduler["max_steps"] = steps
    scheduler.setdefault("local_batch_size", 2)
    scheduler.setdefault("global_batch_size", scheduler["local_batch_size"] * WORLD)
    for key in ("dataset", "processor", "dataloader", "validation_dataset", "validation_dataloader", "packed_sequence"):
        raw.pop(key, None)
    raw["processor"] = {"_target_": no_processor}
    raw["dataset"] = {"_target_": synthetic_dataset, "spec": spec, "size": steps * scheduler["global_batch_size"]}
    raw["dataloader"] = {"shuffle": False, "collate_fn": {"_target_": synthetic_collate, "spec": spec}}
    raw.setdefault("checkpoint", {})["checkpoint_dir"] = scratch_dir
    raw["checkpoint"].setdefault("enabled", False)
    return ConfigNode(raw), spec


def build_and_train(recipe_path: str | Path, steps: int = 2, *, unfreeze: str | None = None) -> dict[str, Any]:
    """Build, parallelise and train the recipe's model for ``steps`` optimizer steps on this rank.

    Expects ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT`` in the environment (the
    framework's ``initialize_distributed`` joins the gloo group itself). Returns this rank's
    record; an exception is recorded (``error``, ``traceback``, ``stage``), never raised."""
    result: dict[str, Any] = {
        "rank": int(os.environ.get("RANK", "0")), "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        "steps": steps, "recipe": str(recipe_path), "stage": "import", "stages": {},
        "cuda_substitutions": [], "substitutions": [], "trainability_calls": [], "losses": [], "grad_norms": [],
        "error": None, "traceback": None,
    }
    started = last = time.monotonic()

    def stage(name: str) -> None:
        """Close the current stage (its duration in seconds goes to ``stages``) and open ``name``."""
        nonlocal last
        now = time.monotonic()
        result["stages"][result["stage"]] = round(now - last, 3)
        result["stage"], last = name, now

    try:
        import torch

        torch.set_num_threads(1)  # two ranks share two cores
        import nemo_automodel
        import transformers

        result["versions"] = {"nemo_automodel": nemo_automodel.__version__, "transformers": transformers.__version__,
                              "torch": torch.__version__}
        with tempfile.TemporaryDirectory(prefix="nemo_harness_") as scratch, \
                cpu_substitutions(result["cuda_substitutions"]), trainability_probe(result["trainability_calls"]):
            stage("load_recipe")
            cfg, spec = load_recipe(recipe_path, steps, scratch_dir=scratch)
            result["batch_spec"] = spec
            _run_recipe(cfg, steps, result, stage, unfreeze=unfreeze)
        stage("done")
    except Exception as error:  # recorded for the caller, who asserts on it
        result["error"] = f"{type(error).__name__}: {error}"
        result["traceback"] = traceback.format_exc()
    result["stages"][result["stage"]] = round(time.monotonic() - last, 3)
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def _record_after_setup(model, optimizers, result: dict[str, Any], distributed_setup) -> dict[str, Any]:
    params = describe_parameters(model, optimizers)
    strategy = distributed_setup.strategy_config
    result["strategy"] = {
        "class": type(strategy).__name__,
        "mp_policy": repr(getattr(strategy, "mp_policy", None)),
        "frozen_sharding": getattr(getattr(strategy, "multimodal", None), "frozen_sharding", None),
        "mesh": str(distributed_setup.mesh_context.device_mesh),
    }
    result["optimizers"] = [type(opt).__name__ for opt in optimizers]
    from nemo_automodel.components.distributed.model_parallelizer import get_model_parallelizer

    result["parallelizer"] = type(get_model_parallelizer(model)).__name__
    result["model_class"] = type(model).__name__
    result["params"] = params
    result["frozen"] = [n for n, p in params.items() if not p["requires_grad"]]
    result["trainable"] = [n for n, p in params.items() if p["requires_grad"]]
    result["vision_tower"] = {n: p["kind"] for n, p in params.items() if is_vision_tower(n)}
    return full_parameters(model)


def _record_after_training(model, before: dict[str, Any], result: dict[str, Any]) -> None:
    import torch

    after = full_parameters(model)
    for name, record in result["params"].items():
        record["unchanged"] = bool(torch.equal(before[name], after[name]))
        record["dtype_after"] = str(after[name].dtype).replace("torch.", "")
        record["digest_before"] = _digest(before[name])
        record["digest_after"] = _digest(after[name])


def _digest(tensor) -> str:
    """A short hash of a full value, to compare ranks (replicated tensors should agree)."""
    import torch

    return hashlib.sha1(tensor.detach().to(torch.float64).contiguous().numpy().tobytes()).hexdigest()[:16]


DEFAULT_RECIPE_CLASS = "nemo_automodel.recipes.vlm.finetune.FinetuneRecipeForVLM"


def recipe_class(cfg) -> type:
    """The class the recipe's ``recipe:`` names (a dotted path), else VLM fine-tuning."""
    import importlib

    module, _, name = str(cfg.get("recipe", DEFAULT_RECIPE_CLASS)).rpartition(".")
    return getattr(importlib.import_module(module), name)


@contextlib.contextmanager
def no_tokenizer_check(log: list[dict[str, Any]] | None = None) -> Iterator[None]:
    """Distillation's ``_verify_tokenizer_compatibility`` loads the student's and the teacher's
    tokenizers by name (they download). A no-op here, logged: the tiny student and teacher are
    built from one config, so they share one vocabulary."""
    from nemo_automodel.recipes.vlm import kd

    saved = kd._verify_tokenizer_compatibility
    calls = [] if log is None else log
    kd._verify_tokenizer_compatibility = lambda *args, **kwargs: calls.append({"call": "_verify_tokenizer_compatibility"})
    try:
        yield
    finally:
        kd._verify_tokenizer_compatibility = saved


def _run_recipe(cfg, steps: int, result: dict[str, Any], stage: Callable[[str], None], *, unfreeze: str | None) -> None:
    """The recipe class itself: ``setup()`` and ``run_train_validation_loop()``. On a distillation
    teacher's own mesh, the record is the teacher's (no optimizer there)."""
    recipe = recipe_class(cfg)(cfg)
    result["recipe_class"] = type(recipe).__name__
    stage("recipe.setup")
    with no_tokenizer_check(result["substitutions"]):
        recipe.setup()
    bridge = getattr(recipe, "kd_mesh_bridge", None)
    result["role"] = "teacher" if bridge is not None and bridge.is_teacher else "student"
    model, optimizers = (recipe.teacher_model, []) if result["role"] == "teacher" else (recipe.model_parts[0], recipe.optimizer)
    stage("snapshot_before")
    before = _record_after_setup(model, optimizers, result, recipe.distributed_setup)
    if unfreeze is not None and result["rank"] == 0:
        dict(model.named_parameters())[unfreeze].requires_grad_(True)

    step = recipe._run_train_optim_step

    def recorded_step(*args, **kwargs):
        sample = step(*args, **kwargs)
        result["losses"].append(float(sample.metrics["loss"]))
        result["grad_norms"].append(float(sample.metrics["grad_norm"]))
        return sample

    recipe._run_train_optim_step = recorded_step
    stage("recipe.run_train_validation_loop")
    recipe.run_train_validation_loop()
    stage("snapshot_after")
    _record_after_training(model, before, result)


# --------------------------------------------------------------------------------------------
# Rank entry point and launcher.
# --------------------------------------------------------------------------------------------

def rank_result_path(out: str | Path, rank: int) -> Path:
    return Path(f"{out}.rank{rank}.json")


def summarize(rank_result: dict[str, Any]) -> dict[str, Any]:
    params = rank_result.get("params") or {}
    frozen = [n for n, p in params.items() if not p["requires_grad"]]
    trainable = [n for n, p in params.items() if p["requires_grad"]]
    kinds: dict[str, int] = {}
    for kind in (rank_result.get("vision_tower") or {}).values():
        kinds[kind] = kinds.get(kind, 0) + 1
    policy_calls = [c for c in rank_result.get("trainability_calls", []) if c["call"] == "_apply_trainability_policy"]
    return {
        "error": rank_result.get("error"),
        "stage": rank_result.get("stage"),
        "model_class": rank_result.get("model_class"),
        "strategy": rank_result.get("strategy"),
        "optimizers": rank_result.get("optimizers"),
        "parallelizer": rank_result.get("parallelizer"),
        "frozen": len(frozen), "trainable": len(trainable),
        "frozen_unchanged": sum(bool(params[n].get("unchanged")) for n in frozen),
        "trainable_changed": sum(params[n].get("unchanged") is False for n in trainable),
        "trainable_unchanged": [n for n in trainable if params[n].get("unchanged")],
        "frozen_in_optimizer": [n for n in frozen if params[n]["in_optimizer"]],
        "frozen_prefixes": sorted({".".join(n.split(".")[:2]) for n in frozen}),
        "vision_tower_kinds": kinds,
        "dtypes": sorted({f'{p["dtype"]}:{"frozen" if not p["requires_grad"] else "trainable"}' for p in params.values()}),
        "losses": rank_result.get("losses"),
        "grad_norms": rank_result.get("grad_norms"),
        "apply_trainability_policy_calls": [f'strict={c["strict"]} trainable_after={c["trainable_after"]} from {c["caller"]}'
                                            for c in policy_calls],
        "cuda_substitutions": sorted({f'{c["call"]} <- {c["caller"]}' for c in rank_result.get("cuda_substitutions", [])}),
        "seconds": rank_result.get("seconds"),
        "stages": rank_result.get("stages"),
    }


def compare_ranks(ranks: dict[str, Any]) -> dict[str, Any]:
    """Parameters whose full value differs between ranks, before and after training."""
    records = [r.get("params") or {} for r in ranks.values()]
    if not records or not all(records):
        return {"compared": False}
    names = sorted(set.intersection(*(set(r) for r in records)))
    differ = {when: [n for n in names if len({r[n].get(f"digest_{when}") for r in records}) > 1]
              for when in ("before", "after")}
    return {"compared": True, "params": len(names), "differ_before": differ["before"], "differ_after": differ["after"],
            "same_losses": len({tuple(r.get("losses") or ()) for r in ranks.values()}) == 1}


def merge_rank_results(out: str | Path, world: int = WORLD, launcher: dict[str, Any] | None = None) -> dict[str, Any]:
    """Merge ``OUT.rank<R>.json`` into ``OUT``: ``{"ranks": {R: record}, "summary": {R: ...}, "launcher": ...}``."""
    ranks: dict[str, Any] = {}
    for rank in range(world):
        part = rank_result_path(out, rank)
        ranks[str(rank)] = (json.loads(part.read_text()) if part.exists()
                            else {"rank": rank, "error": "no result written (crashed, hung or killed)"})
    merged = {"ranks": ranks, "summary": {r: summarize(v) for r, v in ranks.items()},
              "across_ranks": compare_ranks(ranks), "launcher": launcher}
    Path(out).write_text(json.dumps(merged, indent=1, sort_keys=True))
    for rank in range(world):
        rank_result_path(out, rank).unlink(missing_ok=True)
    return merged


def launch(recipe: str, out: str, extra: list[str], *, deadline_s: float, script: str | Path = __file__,
           world: int = WORLD) -> dict[str, Any]:
    """Start ``world`` ranks of ``script`` (``script RECIPE OUT *extra`` with the rank's env), wait up to
    ``deadline_s``, kill what is left, merge their ``OUT.rank<R>.json`` into ``OUT``.

    ``script`` may be another rank script (e.g. one that calls ``mmfreeze.nemo.install()`` and then
    :func:`build_and_train`), as long as it writes :func:`rank_result_path`."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    started = time.monotonic()
    procs = []
    for rank in range(world):
        env = {**os.environ, "PYTHONPATH": pythonpath, "RANK": str(rank), "LOCAL_RANK": str(rank),
               "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        rank_result_path(out, rank).unlink(missing_ok=True)
        log = Path(f"{out}.rank{rank}.log").open("w")
        procs.append(subprocess.Popen([sys.executable, str(script), recipe, out, *extra],
                                      stdout=log, stderr=subprocess.STDOUT, env=env))
    killed = wait_all(procs, deadline_s=deadline_s, started=started)
    launcher = {"codes": [p.returncode for p in procs], "killed": killed,
                "seconds": round(time.monotonic() - started, 2), "python": sys.executable,
                "logs": [f"{out}.rank{r}.log" for r in range(world)]}
    return merge_rank_results(out, world, launcher)


def _options(argv: list[str]) -> tuple[int, str | None, int]:
    steps, unfreeze, world = 2, None, WORLD
    for flag, value in zip(argv[::2], argv[1::2]):
        if flag == "--steps":
            steps = int(value)
        elif flag == "--unfreeze":
            unfreeze = value
        elif flag == "--world":
            world = int(value)
        else:
            raise SystemExit(f"unknown option {flag}")
    return steps, unfreeze, world


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    recipe, out, extra = argv[0], argv[1], argv[2:]
    steps, unfreeze, world = _options(extra)
    if "RANK" not in os.environ:
        merged = launch(recipe, out, extra, deadline_s=float(os.environ.get("TRAIN_WORKER_DEADLINE_S", "150")),
                        world=world)
        print(json.dumps({k: merged[k] for k in ("summary", "across_ranks", "launcher")}, indent=1))
        return 0 if all(not s["error"] for s in merged["summary"].values()) and not merged["launcher"]["killed"] else 1
    result = build_and_train(recipe, steps, unfreeze=unfreeze)
    rank_result_path(out, result["rank"]).write_text(json.dumps(result, indent=1, sort_keys=True))
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
