"""Canonical paths survive activation checkpointing, torch.compile, PEFT LoRA and FSDP2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import peft
import pytest
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

from mmfreeze.resolver import resolve_model_inventory, resolve_multimodal_modules
from tests.distributed.launch import free_port

ROOT = Path(__file__).resolve().parents[2]


def summary(model):
    inventory = resolve_model_inventory(model)
    return {
        "modules": [(m.spec.path, m.spec.role, len(m.parameters)) for m in inventory.modules],
        "language": dict(inventory.language_model.parts),
        "containers": dict(inventory.layer_containers),
    }


def test_checkpoint_wrapper_keeps_canonical_paths_and_binds_the_wrapper(qwen2_vl):
    before = summary(qwen2_vl)
    qwen2_vl.model.visual = checkpoint_wrapper(qwen2_vl.model.visual)
    layers = qwen2_vl.model.language_model.layers
    for index, layer in enumerate(layers):
        layers[index] = checkpoint_wrapper(layer)

    assert summary(qwen2_vl) == before
    tower = next(r for r in resolve_multimodal_modules(qwen2_vl) if r.spec.role == "tower")
    assert tower.raw_path == "model.visual"
    assert tower.module is qwen2_vl.model.visual


def test_torch_compile_wrapper_keeps_canonical_paths(llava):
    before = summary(llava)
    compiled = torch.compile(llava)

    assert summary(compiled) == before
    inventory = resolve_model_inventory(compiled)
    assert inventory.class_name == "LlavaForConditionalGeneration"
    assert inventory.raw_module_paths["model.vision_tower"] == "_orig_mod.model.vision_tower"
    resolved = resolve_multimodal_modules(compiled)
    assert resolved[0].module is llava.model.vision_tower


def test_peft_lora_keeps_canonical_paths_and_maps_raw_parameter_names(llava):
    before = summary(llava)
    lora = peft.get_peft_model(llava, peft.LoraConfig(r=2, target_modules=["q_proj", "linear_1"]))
    inventory = resolve_model_inventory(lora)

    assert [(m.spec.path, m.spec.role) for m in inventory.modules] == [(p, r) for p, r, _ in before["modules"]]
    assert inventory.language_model.parts == before["language"]
    projector = next(m for m in inventory.modules if m.spec.role == "projector")
    assert "model.multi_modal_projector.linear_1.weight" in projector.parameters
    assert any("lora_A" in name for name in projector.parameters)
    raw = inventory.raw_parameter_names["model.multi_modal_projector.linear_1.weight"]
    assert raw == "base_model.model.model.multi_modal_projector.linear_1.base_layer.weight"
    assert dict(lora.named_parameters())[raw] is llava.model.multi_modal_projector.linear_1.base_layer.weight


def test_requires_grad_is_read_live_after_binding(llava):
    resolved = resolve_multimodal_modules(llava)
    llava.model.vision_tower.requires_grad_(False)
    tower = next(r for r in resolved if r.spec.role == "tower")
    assert not any(p.requires_grad for p in tower.module.parameters())


FSDP_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    sys.path.insert(0, {tests!r})
    from conftest import tiny_qwen2_vl
    from mmfreeze.resolver import resolve_model_inventory

    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[1], rank=0, world_size=1)
    model = tiny_qwen2_vl()
    for layer in model.model.language_model.layers:
        fully_shard(layer)
    fully_shard(model.model.visual)
    fully_shard(model)
    inventory = resolve_model_inventory(model)
    print(json.dumps({{
        "class_name": inventory.class_name,
        "modules": [[m.spec.path, m.spec.role, len(m.parameters)] for m in inventory.modules],
        "containers": {{k: list(v) for k, v in inventory.layer_containers.items()}},
    }}))
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_fsdp2_fully_shard_keeps_canonical_paths_and_class(qwen2_vl):
    script = FSDP_SCRIPT.format(tests=str(Path(__file__).parent))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(free_port())], capture_output=True, text=True, timeout=170, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    sharded = json.loads(result.stdout.strip().splitlines()[-1])
    before = summary(qwen2_vl)

    assert sharded["class_name"] == "Qwen2VLForConditionalGeneration"
    assert [tuple(m) for m in sharded["modules"]] == before["modules"]
    assert {k: tuple(v) for k, v in sharded["containers"].items()} == before["containers"]
