from __future__ import annotations

from pathlib import Path

import pytest

from mmfreeze.models import cache as cache_module
from mmfreeze.models.cache import StructureCache, structure_key
from mmfreeze.models.structure import ModelStructure, ParameterInfo

STRUCTURE = ModelStructure(
    class_name="Toy",
    modules={"": "Toy", "a": "Linear", "b": "Linear"},
    module_aliases={"b": "a"},
    parameters=(ParameterInfo(name="a.weight", shape=(2, 3), requires_grad=True, aliases=("b.weight",)),),
    root_attributes={"language_model": "a"},
)


def test_structure_round_trips_through_disk(tmp_path: Path) -> None:
    StructureCache(tmp_path).put("k", STRUCTURE)
    assert StructureCache(tmp_path).get("k") == STRUCTURE


def test_memory_only_cache_writes_nothing(tmp_path: Path) -> None:
    cache = StructureCache(None)
    cache.put("k", STRUCTURE)
    assert cache.get("k") == STRUCTURE and not any(tmp_path.iterdir())


def test_damaged_entry_is_a_miss_not_an_error(tmp_path: Path) -> None:
    StructureCache(tmp_path).put("k", STRUCTURE)
    next((tmp_path / "structures").iterdir()).write_bytes(b"garbage")
    assert StructureCache(tmp_path).get("k") is None


def test_key_changes_with_config_auto_class_and_library_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    base = structure_key({"model_type": "llava"}, "AutoModelForImageTextToText")
    assert structure_key({"model_type": "llava", "x": 1}, "AutoModelForImageTextToText") != base
    assert structure_key({"model_type": "llava"}, "AutoModelForMultimodalLM") != base
    monkeypatch.setattr(cache_module, "installed_version", lambda package: "0.0-other")
    assert structure_key({"model_type": "llava"}, "AutoModelForImageTextToText") != base


def test_key_ignores_key_order_of_the_config() -> None:
    assert structure_key({"a": 1, "b": 2}, "X") == structure_key({"b": 2, "a": 1}, "X")


def test_unwritable_cache_keeps_results_in_memory_and_says_why(tmp_path: Path) -> None:
    """A real fault: a file sits where the cache's folder must go (running as root, permission
    bits would not stop a write)."""
    (tmp_path / "structures").write_text("not a folder")
    cache = StructureCache(tmp_path)
    cache.put("k", STRUCTURE)
    cache.put("other", STRUCTURE)
    assert cache.get("k") == STRUCTURE and cache.get("other") == STRUCTURE
    warning = cache.write_warning()
    assert warning is not None and str(tmp_path) in warning and "--cache-dir" in warning


def test_a_written_cache_has_nothing_to_warn_about(tmp_path: Path) -> None:
    cache = StructureCache(tmp_path)
    cache.put("k", STRUCTURE)
    assert cache.write_warning() is None


def test_a_cache_is_empty_until_an_entry_is_stored(tmp_path: Path) -> None:
    assert StructureCache(tmp_path).is_empty() and StructureCache(None).is_empty()
    cache = StructureCache(tmp_path)
    cache.put("k", STRUCTURE)
    assert not cache.is_empty() and not StructureCache(tmp_path).is_empty()
