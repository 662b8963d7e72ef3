"""The compiler into nemo-automodel 0.7's own selectors: each case is proven with the release's rules.

Every compiled section here is applied with mmfreeze's model of 0.7's pipeline
(``compute_frozen_set`` with 0.7 rules, differential-tested against the framework in
``tests/framework/``) and must leave exactly the frozen set it was compiled from; the framework
itself runs the bundled corpus's compiled sections in ``tests/nemo/test_compiled_on_stock_framework.py``.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mmfreeze.exceptions import NotNativelyExpressible
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.compiler.selectors import compile_native_section
from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.boundary.releases import FrameworkRules

RULES_07 = FrameworkRules(release="0.7")


class Tower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.patch_embed = nn.Linear(4, 4)
        self.blocks = nn.ModuleList(nn.ModuleDict({"attn": nn.Linear(4, 4), "mlp": nn.Linear(4, 4)}) for _ in range(3))
        self.merger = nn.Linear(4, 4)  # the projector, inside the tower (MiniMax-M3, Qwen2-VL)


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.visual = Tower()
        self.embed_tokens = nn.Embedding(8, 4)
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = Inner()
        self.lm_head = nn.Linear(4, 8, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight  # tied


@pytest.fixture(scope="module")
def tiny() -> ModelStructure:
    with torch.device("meta"):
        return structure_of(Tiny())


def names(structure: ModelStructure, *prefixes: str) -> frozenset[str]:
    return frozenset(info.name for info in structure.parameters
                     if any(info.name == p or info.name.startswith(p + ".") for p in prefixes))


def proven(structure: ModelStructure, frozen: frozenset[str]) -> dict:
    section = compile_native_section(structure, frozen, lora=False).as_section()
    result = compute_frozen_set(structure, {"freeze_config": section}, source="r.yaml", override_specs=(), rules=RULES_07)
    assert result.frozen == frozen, section
    return section


def test_a_tower_frozen_with_its_projector_trained_freezes_the_projectors_siblings(tiny: ModelStructure) -> None:
    """Two selectors either way; of equally short answers the one without an unfreeze is written."""
    frozen = names(tiny, "model.visual") - names(tiny, "model.visual.merger")
    assert proven(tiny, frozen) == {"freeze_modules": [{"path": "model.visual.patch_embed"},
                                                       {"path": "model.visual.blocks"}]}


def test_a_tower_frozen_but_one_sub_module_is_one_freeze_and_one_unfreeze(tiny: ModelStructure) -> None:
    frozen = names(tiny, "model.visual") - names(tiny, "model.visual.blocks.1.mlp")
    assert proven(tiny, frozen) == {"freeze_modules": [{"path": "model.visual"}],
                                    "unfreeze_modules": [{"path": "model.visual.blocks.1.mlp"}]}


def test_nothing_frozen_is_an_empty_freeze_list_never_an_empty_section(tiny: ModelStructure) -> None:
    """``{}`` would freeze the vision tower: 0.7 defaults ``freeze_vision_tower`` to true without selectors."""
    assert proven(tiny, frozenset()) == {"freeze_modules": []}


def test_the_same_sub_module_of_every_layer_is_one_glob(tiny: ModelStructure) -> None:
    frozen = names(tiny, *(f"model.visual.blocks.{i}.attn" for i in range(3)))
    assert proven(tiny, frozen) == {"freeze_modules": [{"glob": "model.visual.blocks.*.attn"}]}


def test_some_layers_stay_paths(tiny: ModelStructure) -> None:
    frozen = names(tiny, "model.visual.blocks.1", "model.visual.blocks.2")
    assert proven(tiny, frozen) == {"freeze_modules": [{"path": "model.visual.blocks.1"}, {"path": "model.visual.blocks.2"}]}


def test_a_tied_weight_is_frozen_through_either_name(tiny: ModelStructure) -> None:
    frozen = names(tiny, "model.embed_tokens")
    assert proven(tiny, frozen) == {"freeze_modules": [{"path": "model.embed_tokens"}]}


def test_under_peft_a_base_module_kept_trainable_is_an_unfreeze() -> None:
    from mmfreeze.models.lora import parse_peft_section, with_lora_adapters

    with torch.device("meta"):
        built = structure_of(Tiny())
    peft = {"_target_": "nemo_automodel.components._peft.lora.PeftConfig", "target_modules": ["*.layers.*"], "dim": 2}
    trained = with_lora_adapters(built, parse_peft_section(peft, source="r.yaml"), "0.7")
    baseline = frozenset(info.name for info in trained.parameters if "lora_" not in info.name)
    frozen = baseline - names(trained, "model.visual.merger")
    section = compile_native_section(trained, frozen, lora=True).as_section()
    assert section == {"unfreeze_modules": [{"path": "model.visual.merger"}]}
    result = compute_frozen_set(built, {"freeze_config": section, "peft": peft}, source="r.yaml", override_specs=(),
                                rules=RULES_07)
    assert result.frozen == frozen


def test_a_parameter_on_the_root_that_must_change_cannot_be_compiled() -> None:
    class WithRootParameter(Tiny):
        def __init__(self) -> None:
            super().__init__()
            self.logit_scale = nn.Parameter(torch.ones(1))

    with torch.device("meta"):
        structure = structure_of(WithRootParameter())
    with pytest.raises(NotNativelyExpressible, match="logit_scale sits on the model's root"):
        compile_native_section(structure, frozenset({"logit_scale"}), lora=False, source="r.yaml")
