"""The framework's FSDP2 units over a module tree, as 0.7.0's ``apply_fsdp2_sharding_recursively`` makes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.memory.layout import plan_fsdp_layout
from mmfreeze.models.structure import ModelStructure, ParameterInfo, structure_of
from tests.nemo.framework_env import requires_framework

MODULES = {
    "": "Llava", "model": "LlavaModel",
    "model.vision_tower": "CLIP", "model.vision_tower.layers": "ModuleList",
    "model.vision_tower.layers.0": "Layer", "model.vision_tower.layers.1": "Layer",
    "model.multi_modal_projector": "Projector",
    "model.language_model": "Llama", "model.language_model.embed_tokens": "Embedding",
    "model.language_model.layers": "ModuleList",
    "model.language_model.layers.0": "Layer", "model.language_model.layers.1": "Layer",
    "model.language_model.norm": "RMSNorm", "lm_head": "Linear",
}
NAMES = ["model.vision_tower.layers.0.w", "model.vision_tower.layers.1.w", "model.multi_modal_projector.w",
         "model.language_model.embed_tokens.weight", "model.language_model.layers.0.w",
         "model.language_model.layers.1.w", "model.language_model.norm.weight", "lm_head.weight"]
STRUCTURE = ModelStructure(class_name="Llava", modules=MODULES, module_aliases={},
                           containers={path: kind for path, kind in MODULES.items() if kind == "ModuleList"},
                           parameters=tuple(ParameterInfo(name=n, shape=(4, 2), requires_grad=True) for n in NAMES))
TOWER = frozenset(NAMES[:2])


def units(sharding: str, frozen: frozenset[str] = TOWER) -> list[tuple[str, tuple[str, ...]]]:
    return [(unit.path, unit.parameters) for unit in plan_fsdp_layout(STRUCTURE, frozen, sharding).units]


def test_a_frozen_tower_stays_in_the_root_unit_under_root() -> None:
    """root: layers of the language model are units, the embeddings get their own, the tower joins the root."""
    assert units("root") == [
        ("model.language_model.layers.0", ("model.language_model.layers.0.w",)),
        ("model.language_model.layers.1", ("model.language_model.layers.1.w",)),
        ("model.language_model.embed_tokens", ("model.language_model.embed_tokens.weight",)),
        ("lm_head", ("lm_head.weight",)),
        ("", ("model.vision_tower.layers.0.w", "model.vision_tower.layers.1.w", "model.multi_modal_projector.w",
              "model.language_model.norm.weight")),
    ]


def test_the_units_wrapped_without_resharding_after_forward_are_the_root_each_list_s_last_and_the_output_embedding(
) -> None:
    """``reshard_after_forward=False`` in 0.7.0's ``_apply``: the root, the last layer of each container
    (per_layer: the tower's too) and the untied output embedding; the input embedding reshards."""
    gathered = [unit.path for unit in plan_fsdp_layout(STRUCTURE, TOWER, "per_layer").units if unit.gathered]
    assert gathered == ["model.vision_tower.layers.1", "model.language_model.layers.1", "lm_head", ""]


def test_per_layer_gives_the_frozen_tower_layer_units() -> None:
    assert [path for path, _ in units("per_layer")][:2] == ["model.vision_tower.layers.0", "model.vision_tower.layers.1"]


def test_replicate_keeps_the_frozen_tower_out_of_every_unit() -> None:
    layout = plan_fsdp_layout(STRUCTURE, TOWER, "replicate")
    assert layout.replicated == TOWER
    assert not TOWER & {name for unit in layout.units for name in unit.parameters}


@pytest.mark.parametrize("sharding", ["root", "replicate"])
def test_a_tower_with_a_trainable_parameter_is_sharded_per_layer(sharding: str) -> None:
    """Only fully frozen multimodal modules get the policy; a tower that trains is wrapped like any module."""
    layout = plan_fsdp_layout(STRUCTURE, frozenset(NAMES[:1]), sharding)
    assert layout.replicated == frozenset()
    assert [unit.path for unit in layout.units][:2] == ["model.vision_tower.layers.0", "model.vision_tower.layers.1"]


def test_frozen_embeddings_stay_in_the_root() -> None:
    """Only trainable untied embeddings are split out (``_fully_shard_untied_input_output_embeddings``)."""
    frozen = TOWER | {"model.language_model.embed_tokens.weight", "lm_head.weight"}
    assert "lm_head" not in [path for path, _ in units("root", frozen)]


TOY = """
import torch
from torch import nn


class Layers(nn.ModuleList):
    \"\"\"A layer container under its own class name, as some model code writes one.\"\"\"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = Layers([Block(), Block()])
        self.stages = nn.ModuleList([nn.ModuleList([Block()]), Block()])
        self.head = nn.Linear(4, 4)
"""
"""A model whose layers sit in a ``ModuleList`` subclass, beside nested plain ``ModuleList``s."""
WRAPPED_BY_THE_FRAMEWORK = """
import json, sys
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule
from nemo_automodel.components.distributed.parallelizer import apply_fsdp2_sharding_recursively

dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
model = Toy()
apply_fsdp2_sharding_recursively(model, init_device_mesh("cpu", (1,), mesh_dim_names=("dp",)), None)
print(json.dumps([name for name, module in model.named_modules() if isinstance(module, FSDPModule)]))
dist.destroy_process_group()
"""


def toy_model():
    namespace: dict = {}
    exec(TOY, namespace)
    return namespace["Toy"]()


def test_a_module_list_subclass_is_a_container_under_its_own_class_name() -> None:
    structure = structure_of(toy_model())
    assert structure.modules["layers"] == "Layers" and structure.containers["layers"] == "ModuleList"
    assert [unit.path for unit in plan_fsdp_layout(structure, frozenset(), "root").units] == [
        "layers.0", "layers.1", "stages.0.0", "stages.1", ""]


@pytest.mark.framework
@requires_framework
def test_the_units_under_a_module_list_subclass_are_the_ones_the_frameworks_recursive_sharding_wraps(
    tmp_path: Path,
) -> None:
    """0.7.0's ``apply_fsdp2_sharding_recursively`` on one gloo rank: every module it wraps is a unit
    of mmfreeze's layout (the root, which ``ModelParallelizer`` wraps after it, is the last unit)."""
    done = subprocess.run([sys.executable, "-c", TOY + WRAPPED_BY_THE_FRAMEWORK, str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    units = [unit.path for unit in plan_fsdp_layout(structure_of(toy_model()), frozenset(), "root").units]
    assert json.loads(done.stdout.splitlines()[-1]) == units[:-1]
