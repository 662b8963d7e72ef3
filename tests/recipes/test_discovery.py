"""Which files are recipes: one rule for every command and the pytest plugin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmfreeze.exceptions import RecipeError
from mmfreeze.recipes.discovery import RecipeFinder, _segment_pattern, glob_pattern
from mmfreeze.recipes.documents import YamlDocuments

RECIPE = "model:\n  _target_: transformers.AutoModelForCausalLM.from_pretrained\n  pretrained_model_name_or_path: org/m\n"


def write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)


def names(paths: tuple[Path, ...] | list[Path], root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in paths]


def test_finds_yaml_recursively_and_skips_environments_and_vcs(tmp_path: Path) -> None:
    for relative in ["a.yaml", "sub/b.yml", ".git/c.yaml", ".venv/d.yaml", "env2/e.yaml", "notes.txt"]:
        write(tmp_path, {relative: RECIPE})
    (tmp_path / "env2" / "pyvenv.cfg").write_text("")
    assert names(RecipeFinder(root=tmp_path).discover([tmp_path]).recipes, tmp_path) == ["a.yaml", "sub/b.yml"]


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="no such file"):
        RecipeFinder(root=tmp_path).discover([tmp_path / "nope"])


def test_only_yaml_with_a_top_level_model_key_is_a_recipe(tmp_path: Path) -> None:
    write(tmp_path, {
        "recipe.yaml": RECIPE,
        "model_null.yaml": "model:\n",  # a recipe with a broken model section: reported, not skipped
        "broken.yaml": "model: [unclosed\n",  # does not parse: may be a broken recipe
        "data.yaml": "datasets: [a, b]\n",
        "list.yaml": "- model: x\n",
        "empty.yaml": "",
        "nested.yaml": "train:\n  model: x\n",
    })
    found = RecipeFinder(root=tmp_path).discover([tmp_path])
    assert names(found.recipes, tmp_path) == ["broken.yaml", "model_null.yaml", "recipe.yaml"]
    assert names(found.not_recipes, tmp_path) == ["data.yaml", "empty.yaml", "list.yaml", "nested.yaml"]


def test_exclude_globs_are_relative_to_the_root_and_a_folder_glob_excludes_below_it(tmp_path: Path) -> None:
    write(tmp_path, {f"recipes/{name}": RECIPE for name in ("a.yaml", "custom/b.yaml", "custom/deep/c.yaml", "d_custom.yaml")})
    finder = RecipeFinder(root=tmp_path, exclude=("recipes/custom", "**/*_custom.yaml"))
    found = finder.discover([tmp_path / "recipes"])
    assert names(found.recipes, tmp_path) == ["recipes/a.yaml"]
    assert names(found.excluded, tmp_path) == ["recipes/custom/b.yaml", "recipes/custom/deep/c.yaml", "recipes/d_custom.yaml"]


@pytest.mark.parametrize(("glob", "path", "matches"), [
    ("recipes/*.yaml", "recipes/a.yaml", True),
    ("recipes/*.yaml", "recipes/sub/a.yaml", False),
    ("recipes/**", "recipes/sub/a.yaml", True),
    ("**/a.yaml", "a.yaml", True),
    ("recipes/**/a.yaml", "recipes/a.yaml", True),
    ("recipes/[ab]?.yml", "recipes/bz.yml", True),
    ("recipes/[!ab]?.yml", "recipes/bz.yml", False),
    ("recipes/a.yaml", "recipes/a_yaml", False),
])
def test_glob_semantics(glob: str, path: str, matches: bool) -> None:
    """`*` and `?` stay in one folder name, `**` spans folders, `.` is literal."""
    assert bool(glob_pattern(glob).fullmatch(path)) is matches


def test_each_file_is_parsed_once_for_discovery_and_loading(tmp_path: Path) -> None:
    write(tmp_path, {"a.yaml": RECIPE})
    documents = YamlDocuments(tmp_path)
    finder = RecipeFinder(root=tmp_path, documents=documents)
    assert finder.is_recipe(tmp_path / "a.yaml")
    (tmp_path / "a.yaml").write_text("not: a recipe any more\n")  # the run keeps what it read
    assert finder.is_recipe(tmp_path / "a.yaml") and documents.read(tmp_path / "a.yaml")["model"]


def test_a_path_without_recipes_says_why(tmp_path: Path) -> None:
    write(tmp_path, {"data/a.yaml": "x: 1\n", "data/b.yaml": RECIPE, "empty/readme.md": ""})
    found = RecipeFinder(root=tmp_path, exclude=("data/b.yaml",)).discover([tmp_path / "data", tmp_path / "empty"])
    assert found.under(tmp_path / "data").why_no_recipe() == (
        "holds no recipe: 1 YAML file without a top-level `model:` section, 1 recipe excluded by [tool.mmfreeze] exclude"
    )
    assert found.under(tmp_path / "empty").why_no_recipe() == "holds no YAML recipe (*.yaml, *.yml)"


def _nested_regex(glob: str) -> re.Pattern[str]:
    """The regular expression exclude globs were matched with before issue 48 (`**` as nested
    ``(?:[^/]+/)*``): the reference the linear matcher must agree with, on paths short enough for it."""
    parts = []
    segments = glob.strip("/").split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        parts.append((".*" if last else "(?:[^/]+/)*") if segment == "**" else
                     _segment_pattern(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


GLOB_PARTS = st.sampled_from(["**", "*", "a", "b?", "[ab]*", "*.yaml", "x*y"])
PATH_PARTS = st.sampled_from(["a", "b", "ab", "a.yaml", "xzy", "b1", ""])


@given(glob=st.lists(GLOB_PARTS, min_size=1, max_size=5).map("/".join),
       path=st.lists(PATH_PARTS, min_size=1, max_size=6).map("/".join))
def test_the_linear_glob_matcher_agrees_with_the_regular_expression_it_replaces(glob: str, path: str) -> None:
    assert glob_pattern(glob).fullmatch(path) is bool(_nested_regex(glob).fullmatch(path))


@pytest.mark.timeout(20)  # a hang guard, not a speed target: the nested expression took minutes here
def test_an_exclude_glob_of_many_double_stars_against_a_deep_tree_is_matched_in_linear_time(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "a.yaml").write_text(RECIPE)
    finder = RecipeFinder(root=tmp_path, exclude=("/".join(["**"] * 30) + "/z*/*.yaml",))
    found = finder.discover([tmp_path])
    assert names(found.recipes, tmp_path) == ["/".join(["d"] * 40) + "/a.yaml"] and not found.excluded
