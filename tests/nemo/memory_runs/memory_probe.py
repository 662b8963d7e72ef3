"""What a stock ``nemo_automodel.cli.app`` worker holds, measured at its second optimizer step.

Installed by this folder's ``sitecustomize`` in every torchrun worker of
``tests/nemo/test_memory_exact.py``. It applies ``stock_launch_probe``'s two ``torch.cuda`` stubs
(the framework's only CUDA calls on CPU) and registers torch's public process-wide optimizer step
hooks (``register_optimizer_step_pre_hook`` / ``..._post_hook``). In the pre-hook of the second
step it counts this rank's *unique storages*, each once by ``untyped_storage().data_ptr()`` (of a
DTensor's local tensor), with ``untyped_storage().nbytes()``:

* ``parameters``: every parameter of the model (the largest module holding the optimizer's
  parameters), frozen ones included, and of a distillation recipe's teacher (its ``teacher_model``,
  also recorded on its own under ``teacher``), with each FSDP2 parameter's shard: a unit still
  all-gathered (a teacher's root, which only runs forward) holds both;
* ``gradients``: every parameter's ``.grad``;
* ``optimizer``: every tensor in ``optimizer.state`` (``exp_avg``, ``exp_avg_sq``, ``step`` ...).

It also lists the model's FSDP2 units (modules ``fully_shard`` made ``FSDPModule``s) and the size
of each one's all-gather output, as ``foreach_all_gather`` (``_fsdp_collectives.py``) allocates it:
``world x sum(padded shard numel)`` elements in the all-gather dtype (``param_dtype`` or the
parameter's own), read from each unit's ``FSDPParam``s (torch-internal state; a test may read it).

A storage counted in one kind and met again in another is recorded in ``shared`` (the three must
be disjoint). It registers :mod:`cpu_attention_rule` in the worker (not in the processes a worker
starts), and records the framework's device mesh (each dimension's size: ``cp`` says context
parallelism is on) and which halves of :mod:`cpu_attention_rule` DTensor asked for. Everything goes to
``$MEMORY_RUN_OUT/rank<R>.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import cpu_attention_rule
from cpu_attention_rule import CONSULTED

RANK = int(os.environ.get("RANK", "0"))
STATE: dict[str, Any] = {}


def reset() -> None:
    """A new recipe's record (``run_recipes`` runs several in one worker)."""
    CONSULTED.clear()
    installed = STATE.get("installed", False)
    STATE.clear()
    STATE.update(rank=RANK, world_size=int(os.environ.get("WORLD_SIZE", "1")), steps=0, measured_at_step=None,
                 optimizers=[], installed=installed)


reset()


def _write() -> None:
    path = Path(os.environ["MEMORY_RUN_OUT"]) / f"rank{RANK}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(STATE, indent=1, sort_keys=True))
    tmp.replace(path)


def _local(tensor):
    from torch.distributed.tensor import DTensor

    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def _storages(tensors) -> dict[int, int]:
    """data_ptr -> nbytes of every distinct storage among ``tensors``."""
    found: dict[int, int] = {}
    for tensor in tensors:
        storage = _local(tensor).untyped_storage()
        found[storage.data_ptr()] = storage.nbytes()
    return found


def _measure(optimizer) -> dict[str, Any]:
    import torch
    from stock_launch_probe import _find_model

    model = _find_model(optimizer)
    params = dict(model.named_parameters())
    recipe = _find_recipe()
    teacher = _find_teacher(recipe)
    taught = dict(teacher.named_parameters()) if teacher is not None else {}
    kinds = {
        "parameters": _storages([*params.values(), *taught.values(), *_shards(model), *_shards(teacher)]),
        "gradients": _storages(p.grad for p in params.values() if p.grad is not None),
        "optimizer": _storages(v for state in optimizer.state.values() for v in state.values()
                               if isinstance(v, torch.Tensor)),
    }
    seen: dict[int, str] = {}
    shared = []
    for kind, storages in kinds.items():
        for pointer in storages:
            if pointer and pointer in seen:
                shared.append([seen[pointer], kind])
            seen.setdefault(pointer, kind)
    return {
        "fsdp_units": _fsdp_units(model),
        "bytes": {kind: sum(storages.values()) for kind, storages in kinds.items()},
        "storages": {kind: len(storages) for kind, storages in kinds.items()},
        "shared": shared,
        "model_class": _built_class(model),
        "mesh": _mesh_sizes(recipe),
        "cpu_attention_rule": sorted(CONSULTED),
        "teacher": None if teacher is None else {
            "parameters": sum(_storages([*taught.values(), *_shards(teacher)]).values()),
            "fsdp_units": _fsdp_units(teacher),
            "model_class": _built_class(teacher), "trainable": sum(p.requires_grad for p in taught.values())},
        "params": {name: {"shape": list(p.shape), "local_shape": list(_local(p).shape), "dtype": str(p.dtype),
                          "requires_grad": p.requires_grad, "has_grad": p.grad is not None,
                          "kind": type(p).__name__}
                   for name, p in params.items()},
    }


def _shards(model):
    """Every FSDP2 parameter's own shard (``FSDPParam._sharded_param_data``, torch-internal): while a unit
    is all-gathered its module holds the unsharded tensors, and the shards are held beside them."""
    from torch.distributed.fsdp import FSDPModule

    for module in model.modules() if model is not None else ():
        group = module._get_fsdp_state()._fsdp_param_group if isinstance(module, FSDPModule) else None
        yield from (param._sharded_param_data for param in (group.fsdp_params if group is not None else ()))


def _find_recipe():
    """The running recipe object (the framework's recipe class)."""
    import gc

    return next((obj for obj in gc.get_objects()
                 if str(getattr(type(obj), "__module__", "")).startswith("nemo_automodel.recipes.")
                 and hasattr(obj, "device_mesh")), None)


def _find_teacher(recipe):
    """A distillation recipe's teacher (its ``teacher_model``), held on the same ranks; ``None`` elsewhere."""
    import torch

    teacher = getattr(recipe, "teacher_model", None)
    return teacher if isinstance(teacher, torch.nn.Module) else None


def _mesh_sizes(recipe) -> dict[str, int]:
    """The framework's device mesh, each dimension's size (``cp`` above 1: context parallelism is on)."""
    mesh = getattr(recipe, "device_mesh", None)
    return {} if mesh is None else {name: mesh[name].size() for name in mesh.mesh_dim_names}


def _built_class(model) -> str:
    """The class the recipe built, under the one ``fully_shard`` makes for it (``FSDP<name>``)."""
    built = next(cls for cls in type(model).__mro__ if not cls.__module__.startswith("torch.distributed.fsdp"))
    return f"{built.__module__}.{built.__qualname__}"


def _fsdp_units(model) -> list[dict[str, Any]]:
    import torch
    from torch.distributed.fsdp import FSDPModule

    units = []
    for path, module in model.named_modules():
        if not isinstance(module, FSDPModule):
            continue
        group = module._get_fsdp_state()._fsdp_param_group
        params = group.fsdp_params if group is not None else []
        world = group.mesh_info.shard_mesh_size if group is not None else 1
        gathered = sum(p.padded_sharded_param_size.numel() * world
                       * torch.empty((), dtype=p.param_dtype or p.orig_dtype).element_size() for p in params)
        units.append({"path": path, "parameters": len(params), "all_gather_bytes": gathered})
    return units


def _pre_step(optimizer, args, kwargs) -> None:
    name = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
    if name not in STATE["optimizers"]:
        STATE["optimizers"].append(name)
    if STATE["steps"] == 1 and STATE["measured_at_step"] is None:  # the second step, before it runs
        STATE.update(_measure(optimizer), measured_at_step=2)
        _write()


def _post_step(optimizer, args, kwargs) -> None:
    STATE["steps"] += 1
    _write()


def install() -> None:
    # A process a worker starts (an inductor compile worker under tensor parallelism, say) inherits its
    # environment, and would otherwise write a fresh record over the worker's own.
    if STATE.get("installed") or os.environ.setdefault("MEMORY_PROBE_PID", str(os.getpid())) != str(os.getpid()):
        return
    STATE["installed"] = True
    from stock_launch_probe import _stub_cuda
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    _stub_cuda()
    cpu_attention_rule.register()
    register_optimizer_step_pre_hook(_pre_step)
    register_optimizer_step_post_hook(_post_step)
    _write()
