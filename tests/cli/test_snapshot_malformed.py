"""Property-based: whatever a stored snapshot or a recipe's `freeze_config` holds, `snapshot --check`
says of every recipe one of "matched", "changed" or "input error naming the file", and its exit
code follows from those outcomes. Never a pass by omission (issue 40).

Hypothesis generates the damage; each example is one run of the real command over a repository of
:data:`RECIPES` copies of one bundled recipe, each damaged its own way, with a warm cache (the model
is built once for the module, so an example costs a few seconds).
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from mmfreeze.cli.exit_codes import ExitCode
from tests.cli.test_snapshot_faults import BUNDLED, SETTINGS, run, said

pytestmark = pytest.mark.slow  # each example runs the real command in a subprocess

RECIPES = 12
SNAPSHOT = "snapshots/recipes/{}.yaml.frozen.txt"
ALLOWED = {"passed", "changed", "version_only", "renamed", "input_error"}
"""Matched; changed (a frozen name, or only the release the header names, moved); an input error."""
FAILING_CODES = {ExitCode.CHANGED, ExitCode.INPUT_ERROR, ExitCode.VERSION_ONLY, ExitCode.RENAMED}
EXAMPLES = settings(max_examples=4, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])
FROZEN = "freeze_config:\n  freeze_vision_tower: true\n"
"""The base recipe freezes its tower, so its snapshot has names to damage."""


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with the base recipe, its accepted snapshot, and a cache holding its model."""
    place = tmp_path_factory.mktemp("warm")
    root = place / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(SETTINGS)
    (root / "recipes" / "base.yaml").write_text(BUNDLED.read_text() + FROZEN)
    update = run(root, "--update", "--cache-dir", str(place / "cache"), "recipes")
    assert update.returncode == ExitCode.OK, said(update)
    return place


def _line_edits() -> st.SearchStrategy[Any]:
    junk = st.binary(max_size=40) | st.text(max_size=40).map(str.encode)
    return st.one_of(
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("insert"), st.floats(0, 1), junk),
        st.tuples(st.just("delete line"), st.floats(0, 1)),
        st.tuples(st.just("duplicate line"), st.floats(0, 1)),
        st.tuples(st.just("replace line"), st.floats(0, 1), junk),
        st.tuples(st.just("empty")),
    )


def damaged(accepted: bytes, edits: list[tuple[Any, ...]]) -> bytes:
    data = accepted
    for kind, *args in edits:
        lines = data.splitlines(keepends=True) or [b""]
        where = int(args[0] * len(data)) if args else 0
        line = min(int(args[0] * len(lines)), len(lines) - 1) if args else 0
        if kind == "truncate":
            data = data[:where]
        elif kind == "insert":
            data = data[:where] + args[1] + data[where:]
        elif kind == "delete line":
            data = b"".join(lines[:line] + lines[line + 1:])
        elif kind == "duplicate line":
            data = b"".join(lines[:line + 1] + lines[line:])
        elif kind == "replace line":
            data = b"".join([*lines[:line], args[1] + b"\n", *lines[line + 1:]])
        else:
            data = b""
    return data


def check_each(repo: Path, cache: Path, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Run the check; every recipe reported once, each outcome allowed, the exit code its outcomes'."""
    result = run(repo, "--check", "--report", "json", "--cache-dir", str(cache), "recipes")
    assert "Traceback" not in said(result) and "INTERNALERROR" not in said(result), said(result)
    reported = json.loads(result.stdout)["recipes"]
    by_recipe = {entry["recipe"]: entry for entry in reported}
    assert sorted(by_recipe) == sorted(keys) and len(reported) == len(keys), "a recipe was left out or reported twice"
    assert {entry["status"] for entry in reported} <= ALLOWED, reported
    if all(entry["status"] == "passed" for entry in reported):
        assert result.returncode == ExitCode.OK, said(result)
    else:
        assert result.returncode in FAILING_CODES, said(result)
    return by_recipe


def check_variants(warm: Path, variants: list[tuple[str, bytes]]) -> dict[str, dict[str, Any]]:
    """One real check of a copy of the warm repository whose recipes are ``variants`` instead of its
    own, each a recipe's text and its stored snapshot, named ``recipes/r00.yaml``, ..."""
    with tempfile.TemporaryDirectory() as place:
        repo = Path(shutil.copytree(warm / "repo", Path(place) / "repo"))
        (repo / "recipes" / "base.yaml").unlink()
        (repo / SNAPSHOT.format("base")).unlink()
        keys = []
        for index, (text, stored) in enumerate(variants):
            name = f"r{index:02d}"
            (repo / "recipes" / f"{name}.yaml").write_text(text)
            (repo / SNAPSHOT.format(name)).write_bytes(stored)
            keys.append(f"recipes/{name}.yaml")
        return check_each(repo, Path(shutil.copytree(warm / "cache", Path(place) / "cache")), keys)


def accepted(warm: Path) -> bytes:
    return (warm / "repo" / SNAPSHOT.format("base")).read_bytes()


@EXAMPLES
@given(st.lists(st.lists(_line_edits(), min_size=1, max_size=3), min_size=RECIPES, max_size=RECIPES))
def test_a_malformed_snapshot_is_matched_changed_or_an_input_error_naming_it(warm: Path, edits: list[list]) -> None:
    base, stored = (warm / "repo" / "recipes" / "base.yaml").read_text(), accepted(warm)
    outcomes = check_variants(warm, [(base, damaged(stored, recipe_edits)) for recipe_edits in edits])
    for key, entry in outcomes.items():
        if entry["status"] == "input_error":
            assert SNAPSHOT.format(Path(key).stem) in entry["message"], entry
        if entry["status"] == "passed":
            assert damaged(stored, edits[int(Path(key).stem[1:])]).rstrip() == stored.rstrip(), entry


KEYS = ["vision", "audio", "language", "tower", "projector", "encoder", "modules", "layers", "lr_mult", "role",
        "freeze_vision_tower", "freeze_language_model", "freeze_audio_tower", "freeze_modules", "unfreeze_modules",
        "patterns", "vison", "tower_typo"]
LEAVES = (st.booleans() | st.none() | st.integers(-3, 99_999_999) | st.floats(allow_nan=True, allow_infinity=True)
          | st.sampled_from(["*", "model.visual", "^(.+)+Z$", "{0..99999999}", "visual.blocks.*", "", "0..3"])
          | st.text(max_size=12))
SECTIONS = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4), max_leaves=12)


def recipe_with(section: Any) -> str:
    yaml = YAML()
    document = yaml.load(BUNDLED.read_text())
    document["freeze_config"] = section
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


@EXAMPLES
@given(st.lists(st.dictionaries(st.sampled_from(KEYS), SECTIONS, max_size=4) | SECTIONS,
                min_size=RECIPES, max_size=RECIPES))
def test_a_malformed_freeze_config_is_matched_changed_or_an_input_error_naming_the_recipe(
    warm: Path, sections: list[Any],
) -> None:
    outcomes = check_variants(warm, [(recipe_with(section), accepted(warm)) for section in sections])
    for key, entry in outcomes.items():
        if entry["status"] == "input_error":
            assert key in entry["message"], entry
