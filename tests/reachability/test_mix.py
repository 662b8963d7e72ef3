"""Issue 25 (first part): the mixes a recipe's batches carry, declared, implied by its dataset
builder, or unknown (every plausible one)."""

from __future__ import annotations

from collections import Counter

import pytest

from mmfreeze.distributed.batch_contract import parse_batch_contract
from mmfreeze.exceptions import DistributedConfigError
from mmfreeze.models.structure import MixesToProbe
from mmfreeze.reachability.mix import BUILDER_MIXES, mixes_to_probe, recipe_mixes
from mmfreeze.recipes.recipe import read_yaml
from tests.conftest import EXAMPLE_CONFIGS, recipes_under


def declaring(mixes: object) -> dict:
    return {"distributed": {"multimodal": {"batch_contract": {"mixes": mixes}}},
            "dataset": {"_target_": "nemo_automodel.components.datasets.vlm.datasets.make_cord_v2_dataset"}}


PLAUSIBLE = ("text", "text+image", "text+audio")
"""What a model's forward takes (the probes' mixes), when a recipe says nothing."""


def test_a_declaration_wins_over_the_dataset_builder_and_is_normalised() -> None:
    found = recipe_mixes(declaring(["text", "text+audio+image", "text"]), PLAUSIBLE)
    assert found.mixes == ("text", "text+image+audio") and found.known
    assert found.source == "declared: distributed.multimodal.batch_contract.mixes"


def test_a_known_builder_gives_its_mix_and_an_unknown_one_every_plausible_mix() -> None:
    cord = {"dataset": {"_target_": "nemo_automodel.components.datasets.vlm.datasets.make_cord_v2_dataset"}}
    assert recipe_mixes(cord, PLAUSIBLE).mixes == ("text+image",)
    meta = {"dataset": {"_target_": "nemo_automodel.components.datasets.vlm.datasets.make_meta_dataset"}}
    unknown = recipe_mixes(meta, PLAUSIBLE)
    assert unknown.mixes == PLAUSIBLE and not unknown.known
    assert unknown.describe() == ("text, text+image, text+audio (unknown, so every plausible one: dataset builder "
                                  "make_meta_dataset; declare distributed.multimodal.batch_contract.mixes)")


@pytest.mark.parametrize(("mixes", "key", "message"), [
    ("text", "distributed.multimodal.batch_contract.mixes", "must be a list of mixes"),
    (["image"], "distributed.multimodal.batch_contract.mixes[0]", "a mix is `text` or `text\\+` one or more of"),
    (["text+imgae"], "distributed.multimodal.batch_contract.mixes[0]", "did you mean 'image'"),
    (["text", "text+video+video"], "distributed.multimodal.batch_contract.mixes[1]", "a mix is"),
])
def test_a_malformed_declaration_is_an_error_naming_the_entry(mixes: object, key: str, message: str) -> None:
    with pytest.raises(DistributedConfigError, match=message) as caught:
        parse_batch_contract(declaring(mixes)["distributed"]["multimodal"], source="r.yaml")
    assert caught.value.key == key


def test_a_recipe_asks_probes_of_its_known_mixes_or_of_every_one_its_model_takes() -> None:
    assert mixes_to_probe(declaring(["text", "text+image+audio"])) == MixesToProbe(named=frozenset({"text", "text+image+audio"}))
    builder = {"dataset": {"_target_": "nemo_automodel.components.datasets.audio.datasets.make_cv17_dataset"}}
    assert mixes_to_probe(builder) == MixesToProbe(named=frozenset({"text+audio"}))
    assert mixes_to_probe({"dataset": {"_target_": "nemo_automodel.components.datasets.vlm.datasets.make_meta_dataset"}}) \
        == MixesToProbe(every=True)
    # A declaration that does not parse is reported by the reachability step; its build probes every mix.
    assert mixes_to_probe(declaring(["image"])) == MixesToProbe(every=True)
    # A forward's mixes, in order: only those asked for, and every one for a recipe of unknown mix.
    assert MixesToProbe(named=frozenset({"text+audio", "text+image+audio"})).among(PLAUSIBLE) == ("text+audio",)
    assert MixesToProbe(every=True).among(PLAUSIBLE) == PLAUSIBLE


def test_the_batch_contract_takes_mixes_beside_rank_uniform() -> None:
    contract = parse_batch_contract({"batch_contract": {"rank_uniform": ["vision"], "mixes": ["text+image"]}})
    assert contract.rank_uniform_modalities == {"vision"}
    with pytest.raises(DistributedConfigError, match="either or both"):
        parse_batch_contract({"batch_contract": {"mixess": ["text"]}})


def test_every_bundled_recipe_gets_its_mixes_and_only_data_file_builders_leave_them_unknown() -> None:
    unknown = Counter()
    for path in recipes_under(EXAMPLE_CONFIGS):
        document = read_yaml(path, shown=path.name)
        found = recipe_mixes(document, PLAUSIBLE)
        assert found.mixes, path
        if not found.known:
            unknown[document["dataset"]["_target_"].rpartition(".")[2]] += 1
    assert set(unknown) == {"make_meta_dataset", "InterleavedMixture"}, unknown
    assert len(BUILDER_MIXES) == 13
