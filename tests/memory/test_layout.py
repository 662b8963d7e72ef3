"""The framework's FSDP2 units over a module tree, as 0.7.0's ``apply_fsdp2_sharding_recursively`` makes them."""

from __future__ import annotations

import pytest

from mmfreeze.memory.layout import plan_fsdp_layout
from mmfreeze.models.structure import ModelStructure, ParameterInfo

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
