from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest

from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.recipes.recipe import TRAINABILITY_SECTIONS
from mmfreeze.snapshots.compute import snapshot_of
from mmfreeze.snapshots.format import Snapshot, render_snapshot
from mmfreeze.snapshots.frozen_cache import RECORD_FORMAT_VERSION, FrozenSetCache, frozen_set_key
from tests.models.test_cache import STRUCTURE

DOCUMENT = {"freeze_config": {"language": {"decoder": True}}, "optim": {"lr": 1e-5}}


def record(document: dict | None = None, **header: str) -> Snapshot:
    """The snapshot of one computation on the toy structure, as the cache stores it."""
    document = {"freeze_config": {"freeze_language_model": True}} if document is None else document
    result = compute_frozen_set(replace(STRUCTURE, linear_modules=frozenset({"a", "b"})), document,
                                source="r.yaml", override_specs=())
    return snapshot_of(result, **{"recipe": "r.yaml", "model_id": "org/toy", "config": "local", **header})


LORA = {"peft": {"target_modules": ["a"]}}


def test_a_computations_snapshot_carries_its_counts_and_stored_names() -> None:
    snapshot = record(recipe="cfg/r.yaml", config="registry (published)")
    assert snapshot.frozen == {"a.weight"} and snapshot.lines == ("a.weight",)
    assert (snapshot.header.frozen_tensors, snapshot.header.frozen_parameters, snapshot.header.trainable_tensors) == (1, 6, 0)
    assert (snapshot.header.recipe, snapshot.header.model_id, snapshot.header.architecture) == ("cfg/r.yaml", "org/toy", "Toy")


def test_the_snapshot_of_a_lora_recipe_carries_its_adapter_names_and_one_without_lora_none() -> None:
    snapshot = record(LORA, recipe="cfg/r.yaml")
    assert snapshot.adapter_lines == ("a.lora_A.weight", "a.lora_B.weight")
    assert snapshot.frozen == {"a.weight"}  # the adapted weight; its adapters train
    assert record().adapter_lines is None


@pytest.mark.parametrize("document", [None, LORA], ids=["without-lora", "lora"])
def test_record_round_trips_through_disk(tmp_path: Path, document: dict | None) -> None:
    FrozenSetCache(tmp_path).put("k", record(document))
    assert FrozenSetCache(tmp_path).get("k") == record(document)


def test_an_entry_of_an_earlier_format_is_a_miss(tmp_path: Path) -> None:
    stale = {"snapshot": render_snapshot(record(LORA)), "format": RECORD_FORMAT_VERSION - 1}
    FrozenSetCache(tmp_path).put("k", record(LORA))
    next((tmp_path / "frozen_sets").iterdir()).write_bytes(gzip.compress(json.dumps(stale).encode()))
    assert FrozenSetCache(tmp_path).get("k") is None


@pytest.mark.parametrize("damage", [b"garbage", gzip.compress(b'{"format": 0}'), gzip.compress(b'{"format": 1}'),
                                    gzip.compress(json.dumps({"format": RECORD_FORMAT_VERSION, "snapshot": "# not a snapshot"}).encode())],
                         ids=["garbage", "format-0", "format-1", "snapshot-unreadable"])
def test_damaged_or_other_format_entry_is_a_miss(tmp_path: Path, damage: bytes) -> None:
    FrozenSetCache(tmp_path).put("k", record())
    next((tmp_path / "frozen_sets").iterdir()).write_bytes(damage)
    assert FrozenSetCache(tmp_path).get("k") is None


def test_key_changes_with_the_structure_the_code_the_release_and_every_section_the_engine_reads() -> None:
    base = frozen_set_key("structure", DOCUMENT, "code", "0.7")
    assert frozen_set_key("other-structure", DOCUMENT, "code", "0.7") != base
    assert frozen_set_key("structure", DOCUMENT, "other-code", "0.7") != base
    assert frozen_set_key("structure", DOCUMENT, "code", "0.6") != base
    for section in TRAINABILITY_SECTIONS:
        assert frozen_set_key("structure", {**DOCUMENT, section: {"changed": 1}}, "code", "0.7") != base, section


def test_key_changes_with_the_model_target_which_decides_what_the_header_says_the_framework_builds() -> None:
    base = frozen_set_key("structure", DOCUMENT, "code", "0.7", None, "nemo_automodel.NeMoAutoModelForImageTextToText")
    assert frozen_set_key("structure", DOCUMENT, "code", "0.7", None, "transformers.AutoModelForImageTextToText") != base


def test_key_ignores_sections_the_engine_does_not_read() -> None:
    base = frozen_set_key("structure", DOCUMENT, "code", "0.7")
    assert frozen_set_key("structure", {**DOCUMENT, "optim": {"lr": 2e-5}, "seed": 3}, "code", "0.7") == base


def test_an_entry_copied_under_another_key_is_a_miss_not_that_keys_value(tmp_path: Path) -> None:
    """Issue 48: an entry that decodes but belongs to another key was trusted, and `--check` passed a
    recipe that trained a tower its snapshot says is frozen. Each entry names its key."""
    FrozenSetCache(tmp_path).put("tower-frozen", record())
    FrozenSetCache(tmp_path).put("tower-trained", record(LORA))
    folder = tmp_path / "frozen_sets"
    (folder / "tower-frozen.json.gz").write_bytes((folder / "tower-trained.json.gz").read_bytes())
    assert FrozenSetCache(tmp_path).get("tower-frozen") is None
    assert FrozenSetCache(tmp_path).get("tower-trained") == record(LORA)
