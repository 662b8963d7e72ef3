"""Recipe regexes run bounded, with Python's semantics, and multipliers are finite (issue 40).

`param_group_overrides` patterns come from the recipe. They run on the `regex` package (VERSION0,
Python's syntax) with a time limit shared by every parameter name of the model: a pattern that
backtracks is an input error naming the file and the entry within seconds, and every pattern
that finishes decides exactly what ``re.search`` decides (differential tests below, hand-picked
and generated). The model here is a real torch module read by ``structure_of``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from mmfreeze.exceptions import RecipeError
from mmfreeze.freeze.optimizer import PATTERN_SECONDS, PatternSearch, parse_optimizer
from mmfreeze.freeze.param_groups import assign_groups, check_overrides
from mmfreeze.models.structure import ModelStructure, structure_of
from mmfreeze.recipes.recipe import parse_yaml_text
from tests.cli.test_explain import TINY_LLAVA

BACKTRACKS = r"^(?:.|.)+\d$"
"""Two branches that match the same character under a repetition: exponential on a name that
does not end in a digit, for ``re`` and for ``regex`` alike."""
ISSUE_EXAMPLE = r"^(.+)+Z$"
"""The issue's probe: hangs ``re``; ``regex`` sees that no name holds a ``Z`` and answers at once."""


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.self_attn = nn.ModuleDict({name: nn.Linear(4, 4) for name in ("q_proj", "k_proj", "v_proj", "o_proj")})
        self.mlp = nn.ModuleDict({name: nn.Linear(4, 4) for name in ("gate_proj", "up_proj", "down_proj")})


class TinyVlm(nn.Module):
    """Parameter names as long as a real VLM's (``model.language_model.layers.3.self_attn.q_proj.weight``)."""

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.ModuleDict({
            "language_model": nn.ModuleDict({"layers": nn.ModuleList(Block() for _ in range(4))}),
            "vision_tower": nn.ModuleDict({"encoder": nn.ModuleDict({"layers": nn.ModuleList(Block() for _ in range(2))})}),
            "multi_modal_projector": nn.Linear(4, 4),
        })
        self.lm_head = nn.Linear(4, 4, bias=False)


@pytest.fixture(scope="module")
def structure() -> ModelStructure:
    return structure_of(TinyVlm())


def names_of(structure: ModelStructure) -> list[str]:
    return [info.name for info in structure.parameters]


def recipe_section(pattern: str, lr_mult: str = "2.0") -> str:
    return ("lr_scheduler: {lr_decay_style: constant}\noptimizer:\n  _target_: torch.optim.AdamW\n"
            f"  param_group_overrides:\n    - {{pattern: '{pattern}', lr_mult: {lr_mult}}}\n")


def parsed(text: str, source: str = "recipes/vlm/r.yaml"):
    return parse_optimizer(parse_yaml_text(text, source=source), source=source)


def test_a_backtracking_pattern_is_an_input_error_naming_the_file_and_entry_within_seconds(structure) -> None:
    section = parsed(recipe_section(BACKTRACKS))
    names = names_of(structure)
    started, clock = time.process_time(), time.monotonic()
    with pytest.raises(RecipeError, match="did not finish matching this model's parameter names") as caught:
        check_overrides(section, names, names, source="recipes/vlm/r.yaml")
    work, elapsed = time.process_time() - started, time.monotonic() - clock
    assert (caught.value.source, caught.value.key) == ("recipes/vlm/r.yaml", "optimizer.param_group_overrides[0].pattern")
    # The budget is processor time (regex's timeout is); by the clock, a loaded CI machine takes longer.
    assert PATTERN_SECONDS <= work < PATTERN_SECONDS + 1, work
    assert elapsed < 60, elapsed


def test_the_issues_probe_pattern_is_an_input_error_at_once_not_a_hang(structure) -> None:
    section = parsed(recipe_section(ISSUE_EXAMPLE))
    names = names_of(structure)
    started = time.monotonic()
    with pytest.raises(RecipeError, match="matches no parameter of this model") as caught:
        check_overrides(section, names, names, source="recipes/vlm/r.yaml")
    assert time.monotonic() - started < 1
    assert caught.value.key == "optimizer.param_group_overrides[0].pattern"


def test_the_time_budget_is_shared_by_every_name_of_the_model(structure) -> None:
    """Many names that each take a little add up to one budget: no per-name reset."""
    search = PatternSearch(pattern=BACKTRACKS, key="optimizer.param_group_overrides[0].pattern", source="r.yaml",
                           seconds=0.3)
    started = time.process_time()
    with pytest.raises(RecipeError):
        for name in names_of(structure) * 100:
            search(name)
    assert time.process_time() - started < 1


def test_migrate_and_the_integration_path_group_with_the_same_bounded_search(structure) -> None:
    """`assign_groups` (what `mmfreeze migrate`'s MF005 and the integration call) names the entry's
    recipe even when its caller passes no source."""
    section = parsed(recipe_section(BACKTRACKS), source="recipes/other.yaml")
    names = names_of(structure)
    with pytest.raises(RecipeError) as caught:
        assign_groups(names, names, section.overrides)
    assert caught.value.source == "recipes/other.yaml"


def test_explain_reports_a_backtracking_pattern_with_exit_3_and_one_line(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
                      "  pretrained_model_name_or_path: ckpt\nfreeze_config:\n  freeze_vision_tower: true\n"
                      + recipe_section(BACKTRACKS))
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert time.monotonic() - started < 60
    flat = " ".join(result.stderr.split())
    assert "recipe.yaml: optimizer.param_group_overrides[0].pattern: pattern '^(?:.|.)+\\\\d$' did not finish" in flat
    assert "Traceback" not in result.output


SEMANTICS = [
    r"lm_head", r"^model\.language_model\.layers\.[0-2]\.", r"layers\.\d+\.mlp\.(gate|up)_proj", r"(?i)LM_HEAD",
    r"proj\.weight$", r"proj\.weight\Z", r"\bmlp\b", r"(?<=layers\.)3\.", r"(?<!language_model\.)layers\.1\.",
    r"(?=.*vision)(?=.*q_proj)", r"(?P<part>self_attn|mlp)\.(?P=part)?", r"(\w+)\.\1", r"^(?:(?!vision).)*$",
    r"layers\.(?:1|10)\.", r"q_proj|k_proj", r"[^.]+_proj\.bias", r"^.{0,20}$", r"proj\.(?:weight|bias){1}$",
    r"layers\.\d{1,2}\.self_attn", r"(?x) lm _ head", r"\.0\.", r"a*+b", r"(?>layers\.)\d", r"[\w.]+$",
    r"\d+(?=\.mlp)", r"^$", r"$", r"(?s).*", r"(?m)^model", r"\N{LATIN SMALL LETTER M}odel", r"\x6cm_head",
]


@pytest.mark.parametrize("pattern", SEMANTICS)
def test_a_pattern_that_finishes_decides_what_re_search_decides(structure, pattern: str) -> None:
    search = PatternSearch(pattern=pattern, key="k", source="r.yaml")
    for name in names_of(structure) + ["", "lm_head", "model.layers.10.mlp.mlp.weight"]:
        assert search(name) == bool(re.search(pattern, name)), (pattern, name)


# Generated patterns: atoms, optionally quantified once, joined and alternated; never a quantified
# group, so Python's re (the reference here) cannot backtrack exponentially on them.
ATOMS = st.sampled_from([
    "a", "e", "l", "m", "_", r"\.", ".", r"\d", r"\w", r"\W", "[a-z]", "[^.]", "[0-9_]", "layers", "proj",
    "weight", "bias", r"\b", r"\B", "^", "$", r"\A", r"\Z", "q_proj", "(?i:LM)", "(?=p)", "(?!w)", "(?<=\\.)",
])
PIECES = st.tuples(ATOMS, st.sampled_from(["", "?", "*", "+", "{2}", "{0,3}", "*?", "+?"])).map(
    lambda pair: pair[0] if pair[0] in ("^", "$", r"\A", r"\Z", r"\b", r"\B") or pair[0].startswith("(?") else "".join(pair))
BRANCHES = st.lists(PIECES, min_size=1, max_size=5).map("".join)
PATTERNS = st.lists(BRANCHES, min_size=1, max_size=3).flatmap(
    lambda branches: st.sampled_from(["|".join(branches), "(" + "|".join(branches) + ")", "(?:" + "|".join(branches) + ")?"]))


@settings(max_examples=300, deadline=None)
@given(pattern=PATTERNS)
def test_generated_patterns_decide_what_re_search_decides(structure, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error:
        return
    search = PatternSearch(pattern=pattern, key="k", source="r.yaml")
    for name in names_of(structure):
        assert search(name) == bool(re.search(pattern, name)), (pattern, name)


@pytest.mark.parametrize(("written", "message"), [
    (".nan", "must be a finite number, got nan"),
    (".inf", "must be a finite number, got inf"),
    ("1e400", "must be a finite number, got inf"),
    ("1" + "0" * 400, "must be a finite number"),
    ("-.inf", "must be a non-negative number, got -inf"),
])
@pytest.mark.parametrize("key", ["lr_mult", "wd_mult"])
def test_a_nan_or_infinite_multiplier_is_an_input_error_naming_the_key(written: str, message: str, key: str) -> None:
    text = recipe_section("lm_head").replace("lr_mult: 2.0", f"{key}: {written}")
    with pytest.raises(RecipeError, match=message) as caught:
        parsed(text)
    assert (caught.value.source, caught.value.key) == ("recipes/vlm/r.yaml", f"optimizer.param_group_overrides[0].{key}")


def test_explain_reports_a_nan_multiplier_with_exit_3(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
                      "  pretrained_model_name_or_path: ckpt\n" + recipe_section("lm_head", lr_mult=".nan"))
    result = CliRunner().invoke(cli, ["explain", str(recipe)], terminal_width=400)
    assert result.exit_code == ExitCode.INPUT_ERROR, result.output
    assert "recipe.yaml: optimizer.param_group_overrides[0].lr_mult: must be a finite number, got nan" in \
        " ".join(result.stderr.split())


def test_finite_multipliers_still_parse() -> None:
    section = parsed(recipe_section("lm_head", lr_mult="0"))
    assert section.overrides[0].rate == (0.0, 1.0)
    assert parsed(recipe_section("lm_head", lr_mult="1e30")).overrides[0].lr_mult == 1e30
