"""YAML nesting and alias expansion are bounded before a loader recurses (issue 40).

Hostile files: an alias bomb inside `freeze_config`, a file nested 1,000 deep (a RecursionError
before), one nested 100,000 deep (a segfault in libyaml's composer before; run in a subprocess so
a crash cannot take pytest down). Each is an input error naming the file, exit 3 from the CLI.
Every YAML file of the bundled corpus still loads, and the cheap text bound that lets a recipe
skip the exact scan is never below the real depth (on the corpus, and on generated documents).
"""

from __future__ import annotations

import io
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from mmfreeze.exceptions import MigrationError, RecipeError
from mmfreeze.migrate.yaml.text import load_roundtrip
from mmfreeze.recipes.recipe import (
    MAX_ALIAS_NODES,
    MAX_YAML_DEPTH,
    _scan_events,
    parse_yaml_text,
    read_yaml,
    text_depth_bound,
)
from tests.conftest import MMFREEZE, REPO_ROOT

MODEL = ("model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
         "  pretrained_model_name_or_path: llava-hf/llava-1.5-7b-hf\n")
CORPUS = sorted([*(REPO_ROOT / "example_configs").rglob("*.yaml"), *(REPO_ROOT / "tests" / "migrate" / "fixtures").rglob("*.yaml")])


def alias_bomb(levels: int = 9) -> str:
    """"Billion laughs" inside `freeze_config`: each anchor a list of nine aliases of the one before."""
    lines = ["freeze_config:", "  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return MODEL + "\n".join(lines) + f"\n  vision: {{tower: *l{levels - 1}}}\n"


def flow_nested(depth: int) -> str:
    return MODEL + "freeze_config: " + "[" * depth + "]" * depth + "\n"


def block_nested(depth: int) -> str:
    return MODEL + "freeze_config:\n" + "".join(" " * (2 + level) + f"k{level}:\n" for level in range(depth)) + \
        " " * (2 + depth) + "x: 1\n"


def compact_nested(depth: int) -> str:
    return "- " * depth + "x\n"


def depth_of(data: Any) -> int:
    """How many collections deep ``data`` nests (a scalar: 0)."""
    if isinstance(data, dict):
        return 1 + max((max(depth_of(key), depth_of(value)) for key, value in data.items()), default=0)
    if isinstance(data, list | tuple):
        return 1 + max((depth_of(item) for item in data), default=0)
    return 0


def test_an_alias_bomb_inside_freeze_config_is_an_input_error_naming_the_file_within_a_second(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    started = time.monotonic()
    with pytest.raises(RecipeError, match=f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes") as caught:
        read_yaml(path, shown="recipes/bomb.yaml")
    assert time.monotonic() - started < 1
    assert caught.value.source.startswith("recipes/bomb.yaml:")  # the line of the alias that crosses the limit
    with pytest.raises(MigrationError, match="alias bomb"):
        load_roundtrip(path.read_text(), source="recipes/bomb.yaml")


@pytest.mark.parametrize("text", [flow_nested(1000), block_nested(1000), compact_nested(1000)],
                         ids=["flow", "block", "compact"])
def test_a_file_nested_1000_deep_is_an_input_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(RecipeError, match=f"YAML nests deeper than {MAX_YAML_DEPTH} levels") as caught:
        parse_yaml_text(text, source="recipes/deep.yaml")
    assert caught.value.source.startswith("recipes/deep.yaml:")
    with pytest.raises(MigrationError, match="YAML nests deeper"):
        load_roundtrip(text, source="recipes/deep.yaml")


def test_a_recursive_alias_is_an_input_error() -> None:
    with pytest.raises(RecipeError, match=r"alias \*loop names a node that contains it"):
        parse_yaml_text(MODEL + "freeze_config: &loop {vision: *loop}\n", source="r.yaml")


def test_aliases_count_expanded_for_depth_too() -> None:
    """A chain of anchors each holding the previous one nests one level per link once expanded."""
    chain = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, MAX_YAML_DEPTH + 1))
    with pytest.raises(RecipeError, match="YAML nests deeper"):
        parse_yaml_text(chain, source="r.yaml")
    short = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 10))
    assert depth_of(parse_yaml_text(short, source="r.yaml")) == 11


def test_the_anchors_and_merge_keys_recipes_use_still_load() -> None:
    text = ("_defaults: &defaults {torch_dtype: torch.bfloat16, attn_implementation: sdpa}\n"
            "_optim: &optim {_target_: torch.optim.AdamW, betas: [0.9, 0.999]}\n"
            "model:\n  <<: *defaults\n  pretrained_model_name_or_path: x\noptimizer:\n  <<: *optim\n  lr: 1.0e-5\n")
    document = parse_yaml_text(text, source="r.yaml")
    assert document["model"]["attn_implementation"] == "sdpa" and document["optimizer"]["betas"] == [0.9, 0.999]
    assert load_roundtrip(text, source="r.yaml")["model"]["torch_dtype"] == "torch.bfloat16"


def test_a_list_the_limit_allows_loads_in_full() -> None:
    aliases = MAX_ALIAS_NODES // 2 - 1  # each alias of a one-scalar list adds 2 nodes
    document = parse_yaml_text("a: &a [x]\nb: [" + ", ".join(["*a"] * aliases) + "]\n", source="r.yaml")
    assert len(document["b"]) == aliases
    with pytest.raises(RecipeError, match="alias bomb"):
        parse_yaml_text("a: &a [x]\nb: [" + ", ".join(["*a"] * (aliases + 2)) + "]\n", source="r.yaml")


def test_every_yaml_file_of_the_corpus_still_loads_and_its_text_bound_covers_its_depth() -> None:
    assert len([path for path in CORPUS if "example_configs" in path.parts]) == 87
    assert len(CORPUS) == 190
    for path in CORPUS:
        text = path.read_text()
        document = read_yaml(path, shown=str(path))
        assert load_roundtrip(text, source=str(path)) == document
        _scan_events(YAML(typ="safe", pure=False).parse(text), source=str(path), error_type=RecipeError)  # exact path
        assert depth_of(document) <= text_depth_bound(text) <= MAX_YAML_DEPTH, path


# Generated documents: nested mappings and lists dumped in block, flow and mixed styles with
# several indentations (indentless sequences, compact `- - x`, offsets), some deeper than the limit.
LEAVES = st.one_of(st.integers(-5, 5), st.sampled_from(["x", "a b", "[q]", "- z", "k: v", "&a", "*b", "'"]))
TREES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, min_size=1, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "c", "freeze_config"]), inner, min_size=1, max_size=3),
), max_leaves=12)


def chain(depth: int, kinds: list[bool], leaf: Any) -> Any:
    node = leaf
    for level in range(depth):
        node = [node] if kinds[level % len(kinds)] else {f"k{level % 3}": node}
    return node


def dump(data: Any, flow: bool | None, mapping: int, sequence: int, offset: int) -> str:
    yaml = YAML(typ="rt")
    yaml.default_flow_style = flow
    yaml.indent(mapping=mapping, sequence=max(sequence, offset + 2), offset=offset)
    yaml.width = 4096
    stream = io.StringIO()
    yaml.dump(data, stream)
    return stream.getvalue()


STYLES = st.tuples(st.sampled_from([False, True, None]), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2))


@settings(max_examples=200, deadline=None)
@given(data=st.one_of(TREES, st.builds(chain, st.integers(1, MAX_YAML_DEPTH + 12), st.lists(st.booleans(), min_size=1,
                                                                                          max_size=4), LEAVES)),
       style=STYLES)
def test_generated_documents_load_as_dumped_or_are_refused_exactly_when_too_deep(data: Any, style: tuple) -> None:
    text = dump(data, *style)
    depth = depth_of(data)
    assert text_depth_bound(text) >= depth, text
    if depth > MAX_YAML_DEPTH:
        with pytest.raises(RecipeError, match="YAML nests deeper"):
            parse_yaml_text(text, source="g.yaml")
    else:
        assert parse_yaml_text(text, source="g.yaml") == YAML(typ="safe", pure=True).load(text)


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true"}
    return subprocess.run([*MMFREEZE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("text", "line"), [(flow_nested(100_000), 4), (compact_nested(100_000), 1)],
                         ids=["flow", "compact"])
def test_a_file_nested_100000_deep_under_the_recipes_is_exit_3_naming_it_not_a_segfault(
    tmp_path: Path, text: str, line: int,
) -> None:
    """Before: libyaml's composer recursed until the C stack overflowed (SIGSEGV, exit -11)."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "deep.yaml").write_text(text)
    for args in (("snapshot", "--check", "recipes"), ("explain", "recipes/deep.yaml")):
        result = run(tmp_path, *args)
        assert result.returncode == ExitCode.INPUT_ERROR, (args, result.returncode, result.stderr[-2000:])
        output = result.stdout + result.stderr
        assert f"recipes/deep.yaml:{line}: YAML nests deeper than {MAX_YAML_DEPTH} levels" in output, output
        assert "Traceback" not in output and "Segmentation" not in output


def test_explain_reports_an_alias_bomb_and_a_1000_deep_file_with_exit_3(tmp_path: Path) -> None:
    for name, text, message in (("bomb.yaml", alias_bomb(), "alias bomb"), ("deep.yaml", block_nested(1000),
                                                                            "YAML nests deeper")):
        path = tmp_path / name
        path.write_text(text)
        result = CliRunner().invoke(cli, ["explain", str(path)], terminal_width=400)
        assert result.exit_code == ExitCode.INPUT_ERROR, result.output
        assert name in result.stderr and message in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("text", ["a: 2024-13-45\n", "a: !!float abc\n", "? [a, {b: c}]\n: d\n", "a: !!bool maybe\n",
                                  "a: !!int 0x\n", "a: \ud800\n"])
def test_a_value_ruamel_cannot_build_is_an_input_error_naming_the_file(text: str) -> None:
    """ruamel's constructors raise ValueError, TypeError, KeyError, IndexError on these."""
    with pytest.raises(RecipeError) as caught:
        parse_yaml_text(text, source="recipes/r.yaml")
    assert caught.value.source.startswith("recipes/r.yaml")
    with pytest.raises(MigrationError):
        load_roundtrip(text, source="recipes/r.yaml")


YAML_ALPHABET = st.sampled_from(list("ab:-?[]{}&*!|>'\",# \n\t0.") + ["\n  ", "*a", "&a", "<<: ", "!!int ", "2024-13-45"])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(YAML_ALPHABET, max_size=60).map("".join))
def test_any_text_loads_or_is_an_input_error_naming_the_file(text: str) -> None:
    for load, error in ((lambda: parse_yaml_text(text, source="g.yaml"), RecipeError),
                        (lambda: load_roundtrip(text, source="g.yaml"), MigrationError)):
        try:
            load()
        except error as caught:
            assert caught.source is not None and caught.source.startswith("g.yaml")
