"""The bundled corpus (example_configs/) and offline registry (mmfreeze/registry/configs/) stay coherent."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from mmfreeze.recipes.interpolation import resolve_references

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "example_configs"
PRE_MIGRATION = ROOT / "tests" / "migrate" / "fixtures" / "pre_migration"
REGISTRY = ROOT / "mmfreeze" / "registry" / "configs"

ALLOWED_TARGETS = {
    "nemo_automodel.components.models.gemma4_drafter.composite.Gemma4WithDrafter.from_pretrained",
    "nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained",
    "nemo_automodel.NeMoAutoModelForImageTextToText.from_config",
    "nemo_automodel.NeMoAutoModelForMultimodalLM.from_pretrained",
    "nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained",
}
"""The framework's own targets only: nemo-automodel 0.7.0's VLM recipe refuses a
``transformers.AutoModelFor*`` one (checked against the framework in
tests/nemo/test_corpus_launchable.py)."""
PROVENANCES = {"checkpoint", "partial", "transformers-default", "framework-default"}
LEGACY_KEYS = {
    "freeze_vision_tower",
    "freeze_audio_tower",
    "freeze_language_model",
    "freeze_video_embedder",
    "freeze_embeddings",
}


def _load_recipes(root: Path = CORPUS) -> dict[Path, dict]:
    yaml = YAML(typ="safe")
    return {p: yaml.load(p.read_text()) for p in sorted(root.rglob("*.yaml"))}


def _registry_file(model_id: str) -> Path:
    return REGISTRY / (model_id.replace("/", "__") + ".json")


RECIPES = _load_recipes()


def _model_sections(doc: dict) -> list[dict]:
    return [doc[k] for k in ("model", "teacher_model") if isinstance(doc.get(k), dict)]


def _model_id(section: dict) -> str:
    """``pretrained_model_name_or_path``, or a from_config recipe's ``config.pretrained_model_name_or_path``."""
    return str(section.get("pretrained_model_name_or_path") or section["config"]["pretrained_model_name_or_path"])


def _model_ids() -> dict[Path, list[str]]:
    return {
        p: [resolve_references(_model_id(s), source=str(p), key="model") for s in _model_sections(doc)]
        for p, doc in RECIPES.items()
    }


def test_corpus_has_at_least_60_recipes():
    assert len(RECIPES) >= 60, len(RECIPES)


def test_every_model_id_has_a_registry_file():
    missing = {p.relative_to(CORPUS).as_posix(): mid for p, ids in _model_ids().items() for mid in ids if not _registry_file(mid).is_file()}
    assert not missing


def test_corpus_covers_at_least_25_architectures():
    architectures = set()
    for p, ids in _model_ids().items():
        config = json.loads(_registry_file(ids[0]).read_text())["config"]
        architectures.add((config["model_type"], config["architectures"][0]))
    assert len(architectures) >= 25, sorted(architectures)


@pytest.mark.parametrize("path", sorted(REGISTRY.glob("*.json")), ids=lambda p: p.stem)
def test_registry_file_shape(path: Path):
    entry = json.loads(path.read_text())
    assert set(entry) == {"model_id", "provenance", "notes", "config"}
    assert entry["provenance"] in PROVENANCES
    assert path.name == entry["model_id"].replace("/", "__") + ".json"
    assert entry["notes"].strip()
    assert entry["config"]["model_type"] and entry["config"]["architectures"]


def test_every_target_is_allowed():
    bad = {
        p.relative_to(CORPUS).as_posix(): s.get("_target_")
        for p, doc in RECIPES.items()
        for s in _model_sections(doc)
        if s.get("_target_") not in ALLOWED_TARGETS
    }
    assert not bad


def test_every_recipe_names_its_recipe_class():
    """The ``automodel`` command requires a top-level ``recipe:`` (what it names is checked against
    the framework in tests/nemo/test_corpus_launchable.py)."""
    missing = [p.relative_to(CORPUS).as_posix() for p, doc in RECIPES.items()
               if not isinstance(doc.get("recipe"), str) or not doc["recipe"].strip()]
    assert not missing


def test_shipped_corpus_is_migrated_to_the_new_vocabulary():
    used = {k for doc in RECIPES.values() for k in (doc.get("freeze_config") or {})}
    assert used and not used & LEGACY_KEYS, used & LEGACY_KEYS


def test_pre_migration_corpus_contains_every_legacy_freeze_config_shape():
    legacy = _load_recipes(PRE_MIGRATION)
    assert [p.relative_to(PRE_MIGRATION) for p in legacy] == [p.relative_to(CORPUS) for p in RECIPES]
    sections = [doc["freeze_config"] for doc in legacy.values() if "freeze_config" in doc]
    assert any(doc is not None and "freeze_config" not in doc for doc in legacy.values()), "a recipe without the section"
    assert any(s == {} for s in sections), "an empty freeze_config section"
    assert any(s and s.get("freeze_embeddings") is True for s in sections)
    assert any(s and s.get("freeze_embeddings") is False for s in sections)
    used = {k for s in sections if s for k in s}
    assert LEGACY_KEYS <= used, LEGACY_KEYS - used
    assert used <= LEGACY_KEYS, "the corpus is pre-migration: only legacy keys"
