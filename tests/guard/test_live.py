"""Reading a live model: canonical names through wrappers, tied parameters once, identities."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

from mmfreeze.guard.live import read_live_model


class TiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(8, 4)
        self.block = nn.Linear(4, 4)
        self.head = nn.Linear(4, 8, bias=False)
        self.head.weight = self.embed.weight


def test_a_tied_parameter_is_one_name_the_first_and_every_name_maps_to_it():
    model = TiedLM()
    model.block.bias.requires_grad_(False)

    live = read_live_model(model)

    assert live.names == ("embed.weight", "block.weight", "block.bias")
    assert live.frozen == {"block.bias"} and live.trainable == {"embed.weight", "block.weight"}
    assert live.names_by_identity[id(model.head.weight)] == "embed.weight"
    assert live.numel == {"embed.weight": 32, "block.weight": 16, "block.bias": 4}


def test_checkpoint_and_compile_wrappers_leave_canonical_names_and_identities():
    model = TiedLM()
    model.block = checkpoint_wrapper(model.block)
    compiled = torch.compile(model)

    live = read_live_model(compiled)

    assert live.names == ("embed.weight", "block.weight", "block.bias")
    assert live.raw_names["block.weight"] == "_orig_mod.block._checkpoint_wrapped_module.weight"
    assert live.names_by_identity[id(model.block._checkpoint_wrapped_module.weight)] == "block.weight"


def test_peft_wrapping_strips_the_root_prefix_and_base_layer():
    import peft  # a declared test dependency

    model = TiedLM()
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules=["block"]))

    live = read_live_model(wrapped)

    assert {"embed.weight", "block.weight", "block.bias"} <= set(live.names)
    assert live.frozen >= {"embed.weight", "block.weight", "block.bias"}  # PEFT froze the base model
    assert live.raw_names["block.weight"] == "base_model.model.block.base_layer.weight"
