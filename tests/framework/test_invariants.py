"""The framework's invariant freezes on the real classes they exist for, against the framework itself.

Small configs of transformers' DeepSeek-V4, MiniMax-M3-VL and Gemma4 classes (built on meta) carry
the parts the invariants freeze: a compressed-sparse-attention indexer, a sparse-attention indexer
and KV-shared layers. An unfreeze of everything must not undo them, and LoRA adapters inside a
dead K/V projection stay frozen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import torch

from mmfreeze.models.build import build_meta_model, resolve_model_class
from mmfreeze.models.loader import build_config
from mmfreeze.models.structure import structure_of
from tests.framework.cases import PEFT_TARGET, Case
from tests.framework.oracle import framework_trainability
from tests.conftest import TALLY_PROPERTY
from tests.framework.test_differential import mmfreeze_trainability

pytestmark = pytest.mark.framework

SMALL_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "deepseek_v4 indexer": ("AutoModelForCausalLM", {"model_type": "deepseek_v4", "num_hidden_layers": 4}),
    "minimax_m3 indexer": ("AutoModelForImageTextToText", {
        "model_type": "minimax_m3_vl",
        "text_config": {"num_hidden_layers": 2, "layer_types": ["full_attention", "minimax_m3_sparse"],
                        "mlp_layer_types": ["sparse", "sparse"]}}),
}
KV_SHARED_GEMMA4 = ("AutoModelForImageTextToText", {
    "model_type": "gemma4", "text_config": {"model_type": "gemma4_text", "num_hidden_layers": 6, "num_kv_shared_layers": 2,
                                            "layer_types": ["sliding_attention", "sliding_attention", "full_attention",
                                                            "sliding_attention", "sliding_attention", "full_attention"]}})
CASES = (
    Case(name="no freeze_config", kind="selector"),
    Case(name="unfreeze everything", kind="selector", freeze_config={"unfreeze_modules": [{"glob": "*"}]}),
    Case(name="LoRA on every Linear", kind="lora", peft={"_target_": PEFT_TARGET, "dim": 2, "match_all_linear": True}),
)


def build(name: str) -> torch.nn.Module:
    auto_class, config = SMALL_CONFIGS[name] if name in SMALL_CONFIGS else KV_SHARED_GEMMA4
    built = build_config(config, source=name)
    return build_meta_model(built, resolve_model_class(built, auto_class))


@pytest.mark.parametrize("name", SMALL_CONFIGS)
def test_invariant_freezes_equal_the_framework_and_survive_unfreeze(
    name: str, record_property: Callable[[str, object], None]
) -> None:
    structure = structure_of(build(name))
    tally = Counter[str]()
    for case in CASES:
        expected = framework_trainability(build(name), case.freeze_config, case.peft)
        *actual, _ = mmfreeze_trainability(structure, case)
        assert tuple(actual) == expected, f"{name}, {case.name}: {sorted(actual[0] ^ expected[0])[:5]}"
        assert expected[0], f"{name}, {case.name}: the invariant froze nothing, so this case proves nothing"
        tally[case.kind] += 1
    record_property(TALLY_PROPERTY, dict(tally))


def test_kv_shared_gemma4_layers_have_no_kv_projections_so_both_freeze_nothing_there() -> None:
    """The KV-sharing invariant freezes the K/V projections of KV-shared layers; neither
    transformers release mmfreeze supports (5.18, 5.24) builds any there, for Gemma4 or Gemma3n,
    so the framework freezes nothing and neither does mmfreeze (a test of equality, not of the
    invariant's effect, which no buildable class shows)."""
    structure = structure_of(build("gemma4 KV-shared layers"))
    assert not any(".layers.5.self_attn.k_proj." in info.name for info in structure.parameters)
    case = Case(name="no freeze_config", kind="selector")
    expected = framework_trainability(build("gemma4 KV-shared layers"), case.freeze_config, case.peft)
    *actual, _ = mmfreeze_trainability(structure, case)
    assert tuple(actual) == expected
    assert expected[0] == frozenset()


def test_the_compiled_oracle_binds_every_free_name_to_the_frameworks_own_object() -> None:
    """Where infrastructure.py does not import (--no-deps), the policy is compiled from its source;
    every global it reads is then the object the framework's module imports from model_utils."""
    import ast
    import importlib.util
    from pathlib import Path

    from nemo_automodel.components.utils import model_utils

    from tests.framework.oracle import POLICY, _compiled_policy, free_names, imported_from

    origin = importlib.util.find_spec("nemo_automodel._transformers.infrastructure").origin
    tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == POLICY)
    policy = _compiled_policy()
    framework_names = free_names(function) & set(imported_from(tree))
    assert {"apply_parameter_freezing", "freeze_unused_kv_sharing_params"} <= framework_names
    for name in framework_names:
        assert policy.__globals__[name] is getattr(model_utils, name), name
