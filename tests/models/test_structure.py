from __future__ import annotations

from torch import nn

from mmfreeze.freeze.plan import parameters_under_any
from mmfreeze.models.structure import structure_of


class TiedToy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight
        self.body.weight.requires_grad_(False)

    @property
    def language_model(self) -> nn.Module:
        return self.body


def test_tied_parameter_appears_once_with_its_alias() -> None:
    structure = structure_of(TiedToy())
    names = {info.name: info.aliases for info in structure.parameters}
    assert names == {"embed.weight": ("head.weight",), "body.weight": (), "body.bias": ()}


def test_module_contains_tied_parameter_through_either_name() -> None:
    structure = structure_of(TiedToy())
    assert parameters_under_any(structure, ["head"]) == {"embed.weight": "head"}


def test_requires_grad_is_recorded_as_built() -> None:
    frozen = {info.name for info in structure_of(TiedToy()).parameters if not info.requires_grad}
    assert frozen == {"body.weight"}


def test_legacy_root_attribute_property_is_recorded_by_module_path() -> None:
    assert structure_of(TiedToy()).root_attributes == {"language_model": "body"}


def test_total_counts_a_tied_tensor_once() -> None:
    assert structure_of(TiedToy()).total_numel == 10 * 4 + 4 * 4 + 4
