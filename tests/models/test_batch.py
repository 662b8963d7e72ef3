from __future__ import annotations

import contextlib
import json
import pickle
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from mmfreeze.exceptions import ModelBuildError, RecipeError
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.batch import build_missing
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import ModelRequest, load_structure
from mmfreeze.models.structure import MixesToProbe
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


def model_requests(paths: list[Path]) -> list[ModelRequest]:
    return [model_request(load_recipe(path)) for path in paths]


def test_recipes_sharing_a_config_share_one_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mmfreeze.models import batch

    builds: list[str] = []
    real = batch._build_group
    monkeypatch.setattr(batch, "_build_group", lambda jobs: builds.extend(job[0] for job in jobs) or real(jobs))
    paths = corpus(tmp_path, {"ckpt": TINY_LLAVA}, {"a.yaml": "ckpt", "b.yaml": "ckpt"})
    requests = model_requests(paths)
    cache = StructureCache(None)
    arrived: list[str] = []
    assert build_missing(requests, cache, workers=1, on_built=arrived.append) == {}
    assert len(builds) == 1 and arrived == builds and cache.has(arrived[0])
    assert load_structure(requests[0], cache).structure is load_structure(requests[1], cache).structure
    assert len(builds) == 1


def test_cached_structures_are_neither_built_nor_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = corpus(tmp_path, {"ckpt": TINY_LLAVA}, {"a.yaml": "ckpt"})
    requests = model_requests(paths)
    build_missing(requests, StructureCache(tmp_path / "cache"), workers=1)
    warm = StructureCache(tmp_path / "cache")
    monkeypatch.setattr(warm, "get", lambda key: pytest.fail("a cached entry was read"))
    to_build: list[list] = []
    monkeypatch.setattr("mmfreeze.models.batch._build_all", lambda pending, workers: to_build.append(pending) or iter(()))
    arrived: list[str] = []
    assert build_missing(requests, warm, workers=2, on_built=arrived.append) == {}
    assert to_build == [[]] and arrived == []


TEXT, IMAGE = "text", "text+image"


def probing(request: ModelRequest, *mixes: str) -> ModelRequest:
    return replace(request, probe=MixesToProbe(named=frozenset(mixes)))


def test_a_probed_build_probes_the_mixes_asked_for_and_a_cached_one_gains_those_it_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mmfreeze.models import batch

    asked: list[MixesToProbe | None] = []  # what each build was asked to probe
    real = batch._build_group
    monkeypatch.setattr(batch, "_build_group", lambda jobs: asked.extend(job[6] for job in jobs) or real(jobs))
    a, b = model_requests(corpus(tmp_path, {"ckpt": TINY_LLAVA}, {"a.yaml": "ckpt", "b.yaml": "ckpt"}))
    cache = StructureCache(tmp_path / "cache")
    assert build_missing([probing(a, IMAGE)], cache, workers=1) == {}
    first = load_structure(probing(a, IMAGE), cache).structure
    assert first.mixes == (TEXT, IMAGE) and [probe.mix for probe in first.probes] == [IMAGE]
    assert first.probes[0].method and first.probes[0].unreached  # CLIP's last layer feeds no logit

    # Two recipes of the checkpoint, one already probed for: one build, for the text mix alone.
    assert build_missing([probing(a, IMAGE), probing(b, TEXT)], cache, workers=1) == {}
    assert asked == [MixesToProbe(named=frozenset({IMAGE})), MixesToProbe(named=frozenset({TEXT}))]
    warm = StructureCache(tmp_path / "cache")
    gained = load_structure(probing(a, TEXT, IMAGE), warm).structure
    assert [probe.mix for probe in gained.probes] == [TEXT, IMAGE] and gained.probes[1] == first.probes[0]

    # Every mix its forward takes is probed now, for a recipe whose mix is unknown.
    assert build_missing([replace(a, probe=MixesToProbe(every=True))], warm, workers=1) == {} and len(asked) == 2


def test_a_mix_gets_the_same_probe_whichever_other_mixes_are_asked_for(tmp_path: Path) -> None:
    [request] = model_requests(corpus(tmp_path, {"ckpt": TINY_LLAVA}, {"a.yaml": "ckpt"}))
    every = load_structure(replace(request, probe=MixesToProbe(every=True)), StructureCache(None)).structure
    for probe in every.probes:
        assert load_structure(probing(request, probe.mix), StructureCache(None)).structure.probes == (probe,)


@pytest.mark.slow
def test_results_do_not_depend_on_the_worker_count(tmp_path: Path) -> None:
    bigger = {**TINY_LLAVA, "text_config": {**TINY_LLAVA["text_config"], "num_hidden_layers": 3}}
    paths = corpus(tmp_path, {"small": TINY_LLAVA, "big": bigger}, {"a.yaml": "small", "b.yaml": "big"})
    requests = model_requests(paths)
    serial, parallel = StructureCache(None), StructureCache(None)
    assert build_missing(requests, serial, workers=1) == build_missing(requests, parallel, workers=2) == {}
    for request in requests:
        assert load_structure(request, serial).structure == load_structure(request, parallel).structure


def test_a_bad_config_fails_its_recipes_and_the_rest_carry_on(tmp_path: Path) -> None:
    broken = {**TINY_LLAVA, "text_config": {**TINY_LLAVA["text_config"], "num_attention_heads": 5}}
    paths = corpus(tmp_path, {"good": TINY_LLAVA, "bad": broken}, {"a.yaml": "good", "b.yaml": "bad", "c.yaml": "bad"})
    requests = model_requests(paths)
    cache = StructureCache(None)
    errors = build_missing(requests, cache, workers=1)
    assert list(errors) == requests[1:]
    for request, error in errors.items():
        assert isinstance(error, ModelBuildError) and error.source == request.source and error.key == "model"
    assert load_structure(requests[0], cache).structure.class_name == "LlavaForConditionalGeneration"


def test_errors_survive_pickling_with_their_source_and_key() -> None:
    error = pickle.loads(pickle.dumps(RecipeError("bad", source="r.yaml", key="model")))
    assert (type(error), error.source, error.key, str(error)) == (RecipeError, "r.yaml", "model", "r.yaml: model: bad")


@pytest.mark.slow
def test_a_killed_worker_fails_its_recipes_with_the_way_out_not_a_traceback(tmp_path: Path) -> None:
    """A real fault: each worker process is SIGKILLed as soon as it appears."""
    bigger = {**TINY_LLAVA, "text_config": {**TINY_LLAVA["text_config"], "num_hidden_layers": 3}}
    paths = corpus(tmp_path, {"small": TINY_LLAVA, "big": bigger}, {"a.yaml": "small", "b.yaml": "big"})
    requests = model_requests(paths)
    stop = threading.Event()
    killer = threading.Thread(target=_kill_grandchildren, args=(stop,))
    killer.start()
    try:
        errors = build_missing(requests, StructureCache(None), workers=2)
    finally:
        stop.set()
        killer.join()
    assert set(errors) == set(requests)
    for error in errors.values():
        assert isinstance(error, ModelBuildError) and "--workers 1" in str(error) and error.key == "model"


def _kill_grandchildren(stop: threading.Event) -> None:
    """Kill the pool's workers: children of the forkserver, itself a child of this process."""
    me = psutil.Process()
    while not stop.is_set():
        for child in me.children():
            for worker in child.children():
                with contextlib.suppress(psutil.Error):
                    worker.kill()
        time.sleep(0.01)
