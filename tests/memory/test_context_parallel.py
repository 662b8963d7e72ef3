"""Context parallelism in the memory model: FSDP2 shards over the flattened ``dp_shard x cp`` mesh, so each
rank holds what the same rank holds at ``cp_size`` 1; what it cannot size is an input error naming the key.

Per-rank bytes against real runs (a transformers class through the framework's generic path, Qwen3-VL
through its own, and 2 context- x 2 tensor-parallel ranks) are `tests/nemo/test_memory_exact.py`'s.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mmfreeze.models.framework import choose_builder
from tests.memory.test_explain_world_size import TEACHER, explain, write
from tests.nemo.test_memory_exact import CASES, write_recipe


def sized(root: Path, cp: int) -> dict:
    root.mkdir()
    result = explain(str(write(root, extra=f"  cp_size: {cp}\n")), "--world-size", "4", "--format", "json")
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["memory"]
    return {key: memory[key] for key in ("ranks", "fsdp_units", "gradient_buffers", "all_gather_peak")}


def test_context_parallel_ranks_hold_what_the_same_ranks_hold_without_it(tmp_path: Path) -> None:
    assert sized(tmp_path / "cp2", 2) == sized(tmp_path / "cp1", 1)


@pytest.mark.parametrize(("tp", "extra", "world", "key", "message"), [
    (1, "  cp_size: 2\n", 3, "world_size", "is 3, which distributed.cp_size (2) does not divide"),
    (2, "  cp_size: 2\n", 6, "world_size", "is 6, which distributed.tp_size (2) x distributed.cp_size (2) does not"),
    (1, "  cp_size: 2\n  ep_size: 2\n", 4, "distributed.cp_size", "is 2 beside ep_size 2"),
], ids=["world 3", "world 6 over tp 2 x cp 2", "with expert parallelism"])
def test_what_context_parallelism_cannot_size_is_an_input_error_naming_the_key(
    tmp_path: Path, tp: int, extra: str, world: int, key: str, message: str,
) -> None:
    result = explain(str(write(tmp_path, tp_size=tp, extra=extra)), "--world-size", str(world))
    assert result.exit_code == 3, result.output
    assert f"{key}: " in result.output and message in result.output, result.output


def test_a_data_parallel_size_that_leaves_out_the_context_parallel_ranks_is_refused(tmp_path: Path) -> None:
    result = explain(str(write(tmp_path, dp_size="4", extra="  cp_size: 2\n")), "--world-size", "4")
    assert result.exit_code == 3, result.output
    assert "distributed.dp_size: is 4, but the world size is 4 over cp_size 2" in result.output, result.output


def test_context_parallelism_beside_a_distillation_teacher_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, extra="  cp_size: 2\n")
    path.write_text(path.read_text() + TEACHER + "  torch_dtype: torch.bfloat16\n")
    result = explain(str(path), "--world-size", "2")
    assert result.exit_code == 3, result.output
    assert "distributed.cp_size: context parallelism beside a distillation teacher" in result.output, result.output


@pytest.mark.framework
def test_a_framework_class_no_context_parallel_run_measured_is_refused(tmp_path: Path) -> None:
    """The framework's own Qwen3-VL-MoE (dense Qwen3-VL is the one own class measured under context
    parallelism). The test environment builds transformers' class of another release, refused first."""
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    moe = next(case for case in CASES if case.name == "qwen3_vl_moe_expert_parallel")
    result = explain("--world-size", "2", str(write_recipe(replace(moe, ep=1, cp=2), tmp_path)))
    assert result.exit_code == 3, result.output
    if choose_builder("auto").kind != "framework":
        assert "model: the framework builds Qwen3VLMoeForConditionalGeneration" in result.output, result.output
        return
    assert "distributed.cp_size: is 2 on the framework's own Qwen3VLMoeForConditionalGeneration" in result.output, \
        result.output
