"""Cost of the guard beyond time: `import mmfreeze` stays light, the success path imports nothing
heavy, and no tensor operation runs (so no parameter memory is allocated or gathered)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from mmfreeze.guard import verify_frozen_set
from tests.guard.helpers import REPO, TINY_FREEZE, trainable_parameters, write_snapshot

HEAVY = ("transformers", "rich", "deepdiff", "ruamel", "syrupy", "yaml", "click", "libcst", "pytest", "peft")
SUCCESS_PATH = textwrap.dedent(
    """
    import json, sys
    import torch
    from torch import nn
    import mmfreeze
    loaded = "mmfreeze.guard" in sys.modules
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    model[0].requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    before = set(sys.modules)
    result = mmfreeze.verify_frozen_set(model, "recipes/r.yaml", optimizer=optimizer)
    new = sorted(set(sys.modules) - before)
    print(json.dumps({"guard_loaded_by_import": loaded, "frozen": result.frozen_tensors, "new": new}))
    """
)


def python(code: str, cwd) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_mmfreeze_imports_neither_torch_nor_transformers_nor_the_guard(tmp_path):
    watched = ("torch", "transformers", "mmfreeze.guard")
    code = f"import json, sys, mmfreeze; print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_success_path_imports_nothing_heavy(tmp_path):
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    model[0].requires_grad_(False)
    write_snapshot(model, {}, tmp_path, "recipes/r.yaml")

    found = python(SUCCESS_PATH, tmp_path)

    assert found["frozen"] == 2 and not found["guard_loaded_by_import"]
    assert any(name.startswith("mmfreeze.guard") for name in found["new"])  # the guard did load here
    assert [name for name in found["new"] if name.split(".")[0] in HEAVY] == []


class RecordOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_verifying_a_real_model_runs_no_tensor_operation(tmp_path, monkeypatch):
    from tests.distributed.tiny_vlms import build_tiny
    from mmfreeze.freeze.apply import apply_freeze_config

    monkeypatch.chdir(tmp_path)
    model = build_tiny("llava")
    write_snapshot(model, {"freeze_config": TINY_FREEZE}, tmp_path, "recipes/tiny.yaml")
    apply_freeze_config(model, TINY_FREEZE)
    optimizer = torch.optim.AdamW(trainable_parameters(model))

    with RecordOps() as recorder:
        result = verify_frozen_set(model, "recipes/tiny.yaml", optimizer=optimizer)
        with torch.no_grad():
            model.model.multi_modal_projector.linear_1.weight.mul_(1.0)  # the recorder does see tensor work

    assert result.optimizer_checked
    assert recorder.ops == ["aten.mul_.Tensor"]
