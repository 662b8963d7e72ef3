"""Migration v2 on a copy of example_configs/ extended with 0.7-selector recipes and their Python call sites.

In the default mode (preserve), on real models built on the meta device:
- every rewritten recipe's frozen set under the new vocabulary (invariants included) equals the
  framework's result for the original (`compute_frozen_set`, differential-tested against
  nemo-automodel itself in tests/framework/);
- every rewritten Python call is bound to models and its new dict freezes, on each of them, what
  the original freezes; every other legacy call is kept and reported with its line;
- a second run changes nothing.
The fixtures (`fixtures/selectors/`) cover globs, overlapping selectors, an unfrozen merger, the
last N blocks of a tower, a middle layer range, mixed legacy flags with selectors, LoRA, a recipe
override and the framework's invariant freezes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.migrate.python.bindings import Binding
from mmfreeze.migrate.python.prove import BoundModels
from mmfreeze.migrate.run import MigrateOptions, find_migratable, plan_files, write_changed
from mmfreeze.recipes.layout import read_layout
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.resolver.overrides import override_specs
from mmfreeze.resolver.spec import MultimodalModuleSpec
from tests.conftest import EXAMPLE_CONFIGS
from tests.migrate.calls import FreezeCall, freeze_calls, rewritten_calls

pytestmark = pytest.mark.slow  # whole-corpus: migrates the example corpus and the selector recipes

SELECTORS = Path(__file__).parent / "fixtures" / "selectors"
OPTIONS = MigrateOptions()


@pytest.fixture(scope="module")
def extended_run(tmp_path_factory, workspace_of):
    root = tmp_path_factory.mktemp("extended") / "example_configs"
    shutil.copytree(EXAMPLE_CONFIGS, root)
    shutil.copytree(SELECTORS, root / "selectors")
    files = find_migratable([root])
    results = plan_files(files, OPTIONS, workspace_of(root))
    assert write_changed(files, results) == []
    return root, files, results


def _by_name(extended_run):
    _, files, results = extended_run
    return {path.relative_to(extended_run[0]).as_posix(): result for path, result in zip(files, results, strict=True)}


def test_every_selector_recipe_is_rewritten_and_nothing_is_skipped(extended_run):
    results = _by_name(extended_run)
    assert not {name: r.error for name, r in results.items() if r.status == "skipped"}
    selector_recipes = [name for name in results if name.startswith("selectors/") and name.endswith(".yaml")]
    assert len(selector_recipes) >= 8
    assert {results[name].status for name in selector_recipes} == {"preserved"}
    assert results["vlm_finetune/qwen3_vl/qwen3_vl_8b_docvqa_mergers.yaml"].status == "preserved"
    written = "".join(results[name].new_text for name in selector_recipes)
    for feature in ("except:", "{layers: vision.tower, last: 4}", "{layers: language_model, first: 20}",
                    "{layers: language_model, from: 10, to: 15}", "{glob: 'model.language_model.layers.*.self_attn'}"):
        assert feature in written, feature


def test_every_rewritten_recipe_freezes_what_the_framework_froze(extended_run, structure_of):
    _, files, results = extended_run
    yaml = YAML(typ="safe", pure=True)
    changed = [(path, result) for path, result in zip(files, results, strict=True) if path.suffix == ".yaml" and result.changed]
    assert len(changed) >= 9
    for path, result in changed:
        recipe = load_recipe(path)
        structure = structure_of(model_request(recipe))
        overrides = override_specs(recipe.module_overrides)
        # a compiled corpus recipe means its source (its compiled paths may be another model tree's)
        before = read_layout(yaml.load(result.old_text), source=result.display).document
        original = compute_frozen_set(structure, before, source=result.display, override_specs=overrides)
        written = yaml.load(result.new_text)
        source = read_layout(written, source=result.display).document  # the (modality, role) source under `mmfreeze:`
        rewritten = compute_frozen_set(structure, source, source=result.display, override_specs=overrides)
        compiled = compute_frozen_set(structure, written, source=result.display, override_specs=overrides)
        assert rewritten.vocabulary == "new" and compiled.vocabulary == "selectors", result.display
        assert rewritten.frozen == original.frozen == compiled.frozen, result.display


def test_every_rewritten_python_call_is_proven_on_its_bound_models(extended_run, workspace_of):
    root, files, results = extended_run
    models = BoundModels(workspace_of(root))
    pairs = [(path, pair) for path, result in zip(files, results, strict=True) if path.suffix == ".py"
             for pair in rewritten_calls(result.old_text, result.new_text)]
    assert len(pairs) >= 4
    for path, (old, new) in pairs:
        assert new.binding is not None and new.binding.names, f"{path.name}:{old.line} rewritten without a binding"
        for target in models.targets(new.binding, directory=path.parent):
            overrides = _recipe_overrides(new.binding, target.name, path)
            for legacy, section in zip(old.sections, new.sections, strict=True):
                # the replaced call is apply_parameter_freezing alone (no invariant freezes);
                # apply_freeze_config ends with them
                expected = compute_frozen_set(target.targets.structure, {"freeze_config": legacy}, source=path.name,
                                              override_specs=overrides, invariants=False)
                found = compute_frozen_set(target.targets.structure, {"freeze_config": section}, source=path.name,
                                           override_specs=overrides)
                assert found.frozen == expected.frozen, (path.name, old.line, target.name)


def test_a_call_the_invariant_freezes_would_change_is_reported_not_rewritten(extended_run):
    """Issue #22: 0.7's apply_parameter_freezing applies no invariant freezes, apply_freeze_config
    does. On Gemma4 E2B (KV-shared layers 15-34) the invariant's substring test also freezes the
    vision tower's layers 15 and up, which this call (vision trains: it has selectors) leaves
    trainable, and the K/V of language layers 30-34, which it unfreezes; no rewrite through
    apply_freeze_config is equal, so the call stays and is reported."""
    _, files, results = extended_run
    result = next(r for path, r in zip(files, results, strict=True) if path.name == "selector_calls.py")
    line = next(call.line for call in freeze_calls(result.old_text)
                if any("layers.3[0-4]" in str(section) for section in call.sections))
    finding = next(f for f in result.findings if f.line == line)
    assert finding.rule == "MF101"
    assert "on google/gemma-4-E2B-it: apply_freeze_config also applies the framework's invariant freezes" in finding.message
    assert "(e.g. model.vision_tower.encoder.layers.15.self_attn.k_norm.weight)" in finding.message


def _recipe_overrides(binding: Binding, name: str, path: Path) -> tuple[MultimodalModuleSpec, ...]:
    """The bound recipe's `multimodal` overrides (its LoRA is already in the target's structure)."""
    if name not in binding.recipes:
        return ()
    return override_specs(load_recipe((path.parent / name).resolve()).module_overrides)


def test_every_legacy_call_left_is_reported_with_its_line(extended_run):
    _, files, results = extended_run
    for path, result in zip(files, results, strict=True):
        if path.suffix != ".py":
            continue
        pairs = zip(freeze_calls(result.old_text), freeze_calls(result.new_text), strict=True)
        left = {old.line for old, new in pairs if new.function == "apply_parameter_freezing"}
        assert left == {finding.line for finding in result.findings if finding.rule == "MF101"}, path.name


def test_a_second_run_changes_nothing(extended_run, workspace_of):
    root, _, _ = extended_run
    again = plan_files(find_migratable([root]), OPTIONS, workspace_of(root))
    assert [r.display for r in again if r.changed] == []
    assert not [r.display for r in again if r.status == "skipped"]


def live_frozen_sets(call: FreezeCall, rewrite: FreezeCall, directory: Path) -> list[tuple[frozenset, frozenset]]:
    """(legacy, new) frozen sets of live meta-built models for every bound model and literal."""
    from mmfreeze.freeze.apply import apply_freeze_config, apply_legacy_freeze_config
    from mmfreeze.freeze.keys import strict_problems
    from tests.framework.oracle import framework_call_frozen

    pairs = []
    for build in _live_builders(rewrite.binding, directory):
        for legacy, section in zip(call.sections, rewrite.sections, strict=True):
            old_model = build()
            if strict_problems(legacy):  # only the 0.6 corpus rewrites these: 0.6's rules, as mmfreeze reproduces them
                expected = apply_legacy_freeze_config(old_model, legacy).frozen
            else:  # the call itself: the framework's apply_parameter_freezing, no invariant freezes
                expected = framework_call_frozen(old_model, legacy)
            pairs.append((expected, apply_freeze_config(build(), section).frozen))
    return pairs


def _live_builders(binding: Binding, directory: Path):
    from mmfreeze.models.loader import build_model, build_requested_model, find_config
    from tests.freeze.test_new_vocabulary import config_and_class

    for model_id in binding.models:
        config, auto_class = config_and_class(model_id)
        yield lambda c=config, a=auto_class, m=model_id: build_model(c, a, source=m)
    for name in binding.recipes:
        recipe = load_recipe((directory / name).resolve())
        assert recipe.peft is None and "multimodal" not in recipe.document, "live check: a recipe without peft/overrides"
        request = model_request(recipe)
        yield lambda r=request: build_requested_model(r, find_config(r))


def test_every_rewritten_literal_runs_on_live_models_as_the_legacy_call_did(extended_run, preserve_run):
    """Each rewritten literal (the selector call sites, and the shipped ones the pre-migration copy
    becomes), passed to the runtime `apply_freeze_config` on a live meta-built model, freezes what
    the original passed to nemo-automodel's own trainability policy froze."""
    runs = [(extended_run[1], extended_run[2]), preserve_run]
    checked = 0
    for files, results in runs:
        for path, result in zip(files, results, strict=True):
            for old, new in rewritten_calls(result.old_text, result.new_text) if path.suffix == ".py" else ():
                for expected, found in live_frozen_sets(old, new, path.parent):
                    assert found == expected, (path.name, old.line)
                    checked += 1
    assert checked >= 13
