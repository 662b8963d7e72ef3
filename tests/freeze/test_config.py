"""Strict validation of the new vocabulary: one place, one error type, messages that teach.

Checks against a model use a real Qwen2-VL-2B built on the meta device (vision tower and projector)."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mmfreeze.exceptions import FreezeConfigError
from mmfreeze.freeze.config import FreezeConfig, LayerRange, check_against_model, parse_freeze_config
from mmfreeze.freeze.framework import framework_freeze_steps, parse_framework_freeze_config
from mmfreeze.freeze.selectors import ModuleSelector
from mmfreeze.freeze.keys import detect_vocabulary
from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.boundary.releases import CURRENT_RULES
from mmfreeze.resolver import resolve_structure
from tests.freeze.test_new_vocabulary import QWEN2_VL, structure


@cache
def qwen2_vl() -> FreezeTargets:
    return FreezeTargets(structure=structure(QWEN2_VL), inventory=resolve_structure(structure(QWEN2_VL)))


def check(data: dict) -> None:
    check_against_model(parse_freeze_config(data, source="r.yaml"), qwen2_vl(), source="r.yaml")


def test_documented_shape_parses() -> None:
    config = FreezeConfig.from_dict({
        "vision": {"tower": True, "projector": False}, "language_model": False,
        "modules": ["patch_generator.video_embedder", {"glob": "*.mlp"}, {"layers": "language_model", "first": 2}],
        "except": [{"layers": "vision.tower", "from": 3, "to": 5}],
    })
    assert config.roles == {"vision": {"tower": True, "projector": False}} and config.language_model is False
    assert config.modules == (
        ModuleSelector(where="modules[0]", path="patch_generator.video_embedder"),
        ModuleSelector(where="modules[1]", glob="*.mlp"),
        LayerRange(where="modules[2]", group="language_model", first=2),
    )
    assert config.exceptions == (LayerRange(where="except[0]", group="vision.tower", start=3, stop=5),)


@pytest.mark.parametrize(
    ("section", "vocabulary"),
    [(None, "absent"), ({}, "legacy"), ({"freeze_vision_tower": True}, "legacy"), ({"freeze_custom": 1}, "legacy"),
     ({"vision": {"tower": True}}, "new"), ({"language_model": True}, "new")],
)
def test_vocabulary_is_detected_from_the_keys(section: dict | None, vocabulary: str) -> None:
    assert detect_vocabulary(section) == vocabulary


def test_mixing_vocabularies_is_an_error_naming_both_sides() -> None:
    with pytest.raises(FreezeConfigError, match=r"mixes legacy keys \(freeze_vision_tower\) with new keys \(audio\)"):
        detect_vocabulary({"freeze_vision_tower": True, "audio": {"tower": True}}, source="r.yaml")


def test_freeze_embeddings_error_explains_history_and_the_explicit_way() -> None:
    with pytest.raises(FreezeConfigError) as caught:
        parse_freeze_config({"vision": {"tower": True}, "freeze_embeddings": True}, source="r.yaml")
    message = str(caught.value)
    assert "never read" in message and "mmfreeze migrate" in message and "modules:" in message


def test_unknown_modality_suggests_and_lists_what_exists() -> None:
    with pytest.raises(FreezeConfigError, match=r"no modality 'visoin' \(did you mean 'vision'\?\).*vision \(projector, tower\)"):
        check({"visoin": {"tower": True}})


def test_unknown_role_lists_the_roles_of_that_modality() -> None:
    with pytest.raises(FreezeConfigError, match=r"vision modality has no role 'towr' \(did you mean 'tower'\?\); it has: projector, tower"):
        check({"vision": {"towr": True}})


def test_module_path_matching_nothing_names_the_nearest_paths() -> None:
    with pytest.raises(FreezeConfigError, match=r"`path: model.visual.mergr` matches no module of this model "
                                                 r"\(did you mean 'model.visual.merger'\?\); nearest module paths: ") as caught:
        check({"modules": ["model.visual.mergr"]})
    assert caught.value.key == "freeze_config.modules[0]"


def test_bare_substring_is_not_a_module_path() -> None:
    with pytest.raises(FreezeConfigError, match="`path: visual` matches no module of this model"):
        check({"modules": ["visual"]})


def both_vocabularies(selector: dict) -> tuple[FreezeConfigError, FreezeConfigError]:
    """The error of ``selector`` under the new `modules` (what `migrate` writes) and under 0.7's
    `freeze_modules` (what `snapshot` reads from a recipe not yet migrated)."""
    with pytest.raises(FreezeConfigError) as new:
        check({"modules": [selector]})
    with pytest.raises(FreezeConfigError) as framework:
        config = parse_framework_freeze_config({"freeze_modules": [selector]}, CURRENT_RULES, source="r.yaml")
        list(framework_freeze_steps(qwen2_vl().structure, config, source="r.yaml"))
    return new.value, framework.value


@pytest.mark.parametrize("selector", [{"path": "model.visual.mergr"}, {"glob": "model.visul.*"}])
def test_a_selector_matching_nothing_is_worded_the_same_in_both_vocabularies(selector: dict) -> None:
    new, framework = both_vocabularies(selector)
    assert (new.key, framework.key) == ("freeze_config.modules[0]", "freeze_config.freeze_modules[0]")
    assert "did you mean 'model.visual" in new.message
    assert framework.message == new.message + " (nemo-automodel 0.7 rejects a selector that selects no parameter)"


def test_a_malformed_selector_is_worded_the_same_in_both_vocabularies() -> None:
    new, framework = both_vocabularies({"pth": "model.visual"})
    assert new.message.startswith("a selector is a module path, `{path: X}`, `{glob: X}`, or a layer range")
    assert framework.message.startswith("a selector is `{path: X}` (an exact module path) or `{glob: X}`")
    assert new.message.endswith("got {'pth': 'model.visual'} (did you mean 'path'?)")
    assert framework.message.endswith("got {'pth': 'model.visual'} (did you mean 'path'?)")


@pytest.mark.parametrize("flag", ["yes", 1, None, "true"])
def test_non_boolean_flags_are_rejected(flag: object) -> None:
    with pytest.raises(FreezeConfigError, match="must be true or false"):
        parse_freeze_config({"vision": {"tower": flag}})


def test_every_problem_is_listed_in_one_error() -> None:
    with pytest.raises(FreezeConfigError, match="3 problems") as caught:
        parse_freeze_config({"vision": {"tower": "yes"}, "language_model": 1, "modules": "x"}, source="r.yaml")
    assert caught.value.source == "r.yaml" and caught.value.key == "freeze_config"


@pytest.mark.parametrize(("entry", "message"), [
    ({"path": "a", "glob": "b"}, r"a selector is a module path, `\{path: X\}`, `\{glob: X\}`"),
    ({"pth": "a"}, r"did you mean 'path'\?"),
    ({"glob": ""}, r"modules\[0\].glob: must be a non-empty string"),
    ({"layers": "language_model"}, r"exactly one of `first: N`, `last: N` or `from: A` with `to: B`; got none of them"),
    ({"layers": "language_model", "first": 2, "last": 2}, r"got first, last"),
    ({"layers": "language_model", "lst": 2}, r"modules\[0\].lst: not a layer-range key \(did you mean 'last'\?\)"),
    ({"layers": "language_model", "first": 0}, r"first: must be a whole number \(at least 1\), got 0"),
    ({"layers": "language_model", "from": 5, "to": 2}, r"from: 5 is after to: 2"),
    ({"layers": 3, "last": True}, r"layers: must name a layer stack"),
])
def test_malformed_selectors_name_the_entry(entry: dict, message: str) -> None:
    with pytest.raises(FreezeConfigError, match=message):
        parse_freeze_config({"modules": [entry]})


def test_a_misspelt_except_key_suggests_it() -> None:
    with pytest.raises(FreezeConfigError, match=r"freeze_config.excpet: .*\(did you mean 'except'\?\)"):
        parse_freeze_config({"vision": {"tower": True}, "excpet": ["model.visual.merger"]})


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
keys = st.one_of(st.sampled_from(["vision", "audio", "language_model", "modules", "except", "freeze_embeddings",
                                  "freeze_vision_tower", "tower", "projector", "path", "glob", "layers", "first",
                                  "last", "from", "to"]), st.text(max_size=8), st.integers())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(keys, inner, max_size=3)), max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(st.one_of(values, st.dictionaries(keys, values, max_size=5)))
def test_any_input_validates_or_raises_the_projects_error(data: object) -> None:
    try:
        if detect_vocabulary(data) == "new":
            check(data)  # type: ignore[arg-type]
    except Exception as error:  # noqa: BLE001 - the property is about which type escapes
        assert isinstance(error, FreezeConfigError), f"{type(error).__name__}: {error}"
