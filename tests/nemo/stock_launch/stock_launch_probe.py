"""What a stock ``nemo_automodel.cli.app`` worker does to its parameters, recorded without mmfreeze.

Installed by this folder's ``sitecustomize`` in every torchrun worker of
``tests/nemo/test_stock_launch.py`` (``STOCK_LAUNCH_OUT`` names the output folder). It

* replaces the two ``torch.cuda`` functions nemo-automodel 0.7.0 calls without checking for a GPU,
  exactly as ``tests/nemo/train_worker.py`` ``cpu_substitutions`` does:
  ``reset_peak_memory_stats`` (``recipes/vlm/finetune.py``, ``setup`` and the train loop) becomes
  a no-op, and ``current_device`` returns ``cpu`` to ``auto_model.py`` ``_build_model`` (the
  model's device) and ``0`` to every other caller; each call is logged with its caller;
* registers torch's process-wide optimizer hooks (``register_optimizer_step_pre_hook`` /
  ``..._post_hook``, public torch API, no framework seam): before the first step it finds the model
  (the largest ``nn.Module`` holding the optimizer's parameters) and records, per parameter,
  ``requires_grad``, whether the optimizer holds it, and a hash of its full value (DTensors are
  gathered with ``full_tensor()``, a collective every rank makes in the same order); after every
  step it records the same again;
* records whether any ``mmfreeze`` module is loaded, here, when the dataset is built
  (:func:`check_no_mmfreeze` from ``stock_launch_data``), at every step and at exit.

Everything goes to ``$STOCK_LAUNCH_OUT/rank<R>.json``, rewritten after every event, so a rank that
dies still leaves what it had.
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

RANK = int(os.environ.get("RANK", "0"))
STATE: dict[str, Any] = {
    "rank": RANK,
    "world_size": int(os.environ.get("WORLD_SIZE", "1")),
    "pid": os.getpid(),
    "argv": list(sys.argv),
    "main_module": None,
    "mmfreeze_checks": [],
    "cuda_substitutions": [],
    "optimizers": [],
    "recipes": [],
    "model_class": None,
    "steps": 0,
    "before": None,
    "after": None,
    "exit": None,
}
_started = time.monotonic()
_model = None


def _out() -> Path:
    return Path(os.environ["STOCK_LAUNCH_OUT"]) / f"rank{RANK}.json"


def _write() -> None:
    STATE["seconds"] = round(time.monotonic() - _started, 3)
    path = _out()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(STATE, indent=1, sort_keys=True))
    tmp.replace(path)


def mmfreeze_modules() -> list[str]:
    return sorted(name for name in list(sys.modules) if name == "mmfreeze" or name.startswith("mmfreeze."))


def check_no_mmfreeze(where: str) -> None:
    """Record whether mmfreeze is loaded in this process; raise (failing the run) if it is."""
    loaded = mmfreeze_modules()
    STATE["mmfreeze_checks"].append({"where": where, "loaded": loaded})
    _write()
    if loaded:
        raise RuntimeError(f"mmfreeze is loaded in a stock training process ({where}): {loaded[:5]}")


def _where(frame) -> str:
    filename = frame.f_code.co_filename
    short = filename.split("site-packages/")[-1]
    return f"{short}:{frame.f_lineno} ({frame.f_code.co_name})"


def _stub_cuda() -> None:
    import torch

    def current_device():
        caller = sys._getframe(1)
        value = torch.device("cpu") if caller.f_code.co_name == "_build_model" else 0
        STATE["cuda_substitutions"].append(
            {"call": "torch.cuda.current_device", "caller": _where(caller), "returned": str(value)})
        return value

    def reset_peak_memory_stats(*_: Any, **__: Any) -> None:
        STATE["cuda_substitutions"].append(
            {"call": "torch.cuda.reset_peak_memory_stats", "caller": _where(sys._getframe(1))})

    torch.cuda.current_device = current_device
    torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats


def _digest(tensor) -> str:
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    hasher = hashlib.sha256(f"{flat.dtype}{list(tensor.shape)}".encode())
    hasher.update(flat.view(torch.uint8).numpy().tobytes())
    return hasher.hexdigest()[:24]


def _find_model(optimizer):
    """The largest module holding one of the optimizer's parameters (the recipe's model)."""
    import torch

    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    best, best_count = None, -1
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.nn.Module):  # type(), not isinstance: no __class__ lookups on proxies
            params = list(obj.parameters())
            if len(params) > best_count and any(id(p) in held for p in params):
                best, best_count = obj, len(params)
    return best


def _snapshot(model, optimizer) -> dict[str, dict[str, Any]]:
    from torch.distributed.tensor import DTensor

    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    out = {}
    for name, param in model.named_parameters():
        is_dtensor = isinstance(param, DTensor)
        full = param.detach().full_tensor() if is_dtensor else param.detach()
        out[name] = {"requires_grad": param.requires_grad, "in_optimizer": id(param) in held,
                     "kind": "DTensor" if is_dtensor else "Tensor", "dtype": str(param.dtype).replace("torch.", ""),
                     "shape": list(param.shape), "digest": _digest(full)}
    return out


def _pre_step(optimizer, args, kwargs) -> None:
    global _model
    name = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
    if name not in STATE["optimizers"]:
        STATE["optimizers"].append(name)
    if _model is None:
        check_no_mmfreeze("before the first optimizer step")
        _model = _find_model(optimizer)
        STATE["model_class"] = f"{type(_model).__module__}.{type(_model).__qualname__}"
        STATE["recipes"] = sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects()
                                   if str(getattr(type(o), "__module__", "")).startswith("nemo_automodel.recipes.")
                                   and hasattr(type(o), "run_train_validation_loop")})
        STATE["before"] = _snapshot(_model, optimizer)
        _write()


def _post_step(optimizer, args, kwargs) -> None:
    STATE["steps"] += 1
    STATE["after"] = _snapshot(_model, optimizer)
    STATE["mmfreeze_after_step"] = mmfreeze_modules()
    _write()


def _at_exit() -> None:
    main = sys.modules.get("__main__")
    STATE["main_module"] = getattr(getattr(main, "__spec__", None), "name", None)
    STATE["argv_at_exit"] = list(sys.argv)
    STATE["exit"] = {"mmfreeze_loaded": mmfreeze_modules()}
    _write()


def install() -> None:
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    _stub_cuda()
    register_optimizer_step_pre_hook(_pre_step)
    register_optimizer_step_post_hook(_post_step)
    atexit.register(_at_exit)
    STATE["torch"] = torch.__version__
    check_no_mmfreeze("sitecustomize")
