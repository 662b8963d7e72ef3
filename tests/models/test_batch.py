from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from mmfreeze.exceptions import ModelBuildError, RecipeError
from mmfreeze.models.batch import load_structures
from mmfreeze.models.cache import StructureCache
from mmfreeze.recipes.recipe import load_recipe
from tests.cli.test_explain import TINY_LLAVA

TARGET = "nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained"


def corpus(tmp_path: Path, configs: dict[str, dict], recipes: dict[str, str]) -> list[Path]:
    for name, config in configs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    paths = []
    for name, checkpoint in recipes.items():
        path = tmp_path / name
        path.write_text(f"model:\n  _target_: {TARGET}\n  pretrained_model_name_or_path: {checkpoint}\n")
        paths.append(path)
    return paths


def test_recipes_sharing_a_config_share_one_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mmfreeze.models import batch

    builds: list[str] = []
    real = batch._build_job
    monkeypatch.setattr(batch, "_build_job", lambda job: builds.append(job[0]) or real(job))
    paths = corpus(tmp_path, {"ckpt": TINY_LLAVA}, {"a.yaml": "ckpt", "b.yaml": "ckpt"})
    results = load_structures([load_recipe(p) for p in paths], StructureCache(None), workers=1)
    assert len(builds) == 1
    assert results[paths[0]].structure == results[paths[1]].structure


@pytest.mark.slow
def test_results_do_not_depend_on_the_worker_count(tmp_path: Path) -> None:
    bigger = {**TINY_LLAVA, "text_config": {**TINY_LLAVA["text_config"], "num_hidden_layers": 3}}
    paths = corpus(tmp_path, {"small": TINY_LLAVA, "big": bigger}, {"a.yaml": "small", "b.yaml": "big"})
    recipes = [load_recipe(p) for p in paths]
    serial = load_structures(recipes, StructureCache(None), workers=1)
    parallel = load_structures(recipes, StructureCache(None), workers=2)
    assert {p: r.structure for p, r in serial.items()} == {p: r.structure for p, r in parallel.items()}


def test_a_bad_config_fails_its_recipes_and_the_rest_carry_on(tmp_path: Path) -> None:
    broken = {**TINY_LLAVA, "text_config": {**TINY_LLAVA["text_config"], "num_attention_heads": 5}}
    paths = corpus(tmp_path, {"good": TINY_LLAVA, "bad": broken}, {"a.yaml": "good", "b.yaml": "bad", "c.yaml": "bad"})
    results = load_structures([load_recipe(p) for p in paths], StructureCache(None), workers=1)
    assert results[paths[0]].structure.class_name == "LlavaForConditionalGeneration"
    for path in paths[1:]:
        assert isinstance(results[path], ModelBuildError) and results[path].source.endswith(path.name)


def test_errors_survive_pickling_with_their_source_and_key() -> None:
    error = pickle.loads(pickle.dumps(RecipeError("bad", source="r.yaml", key="model")))
    assert (type(error), error.source, error.key, str(error)) == (RecipeError, "r.yaml", "model", "r.yaml: model: bad")
