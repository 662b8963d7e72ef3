"""The framework's invariant freezes: always applied last, never undone by an unfreeze.

nemo-automodel (0.6 and 0.7, ``components/utils/model_utils.py``) freezes, after every freezing
config and PEFT baseline, parameters that receive no gradient by construction:

- ``freeze_unused_kv_sharing_params``: in the last ``num_kv_shared_layers`` layers (Gemma4
  E2B/E4B) the K/V projections and norms are never used; every parameter whose name contains
  ``layers.<i>.self_attn.<k_proj|v_proj|k_norm|v_norm>`` for such an ``i`` is frozen (a substring
  test, so adapters inside them and any other tower's layers of the same index match too);
- ``freeze_deepseek_v4_indexer_params``: ``.self_attn.compressor.indexer.`` on ``deepseek_v4``;
- ``freeze_minimax_m3_indexer_params``: ``.self_attn.indexer.`` on ``minimax_m3*``.

Each iterates ``named_parameters()``, so a tied parameter is tested under its first name only.
"""

from __future__ import annotations

from collections.abc import Iterator

from mmfreeze.models.structure import ConfigFacts, ModelStructure

DEAD_KV_PROJECTIONS = ("k_proj", "v_proj", "k_norm", "v_norm")


def invariant_freezes(structure: ModelStructure) -> Iterator[tuple[str, str]]:
    """``(parameter name, rule)`` for every parameter the framework's invariants freeze."""
    facts = structure.config_facts
    yield from _dead_kv_parameters(structure, facts)
    for needle, rule in _indexer_needles(facts):
        yield from ((info.name, rule) for info in structure.parameters if needle in info.name)


def _dead_kv_parameters(structure: ModelStructure, facts: ConfigFacts) -> Iterator[tuple[str, str]]:
    if facts.num_kv_shared_layers <= 0 or facts.num_hidden_layers <= 0:
        return
    first_shared = facts.num_hidden_layers - facts.num_kv_shared_layers
    needles = [
        f"layers.{layer}.self_attn.{projection}"
        for layer in range(first_shared, facts.num_hidden_layers)
        for projection in DEAD_KV_PROJECTIONS
    ]
    rule = (f"invariant: K/V of KV-shared layers {first_shared}-{facts.num_hidden_layers - 1} "
            f"(num_kv_shared_layers={facts.num_kv_shared_layers})")
    for info in structure.parameters:
        if any(needle in info.name for needle in needles):
            yield info.name, rule


def _indexer_needles(facts: ConfigFacts) -> Iterator[tuple[str, str]]:
    if facts.model_type == "deepseek_v4":
        yield ".self_attn.compressor.indexer.", "invariant: deepseek_v4 indexer"
    if facts.model_type.startswith("minimax_m3"):
        yield ".self_attn.indexer.", "invariant: minimax_m3 indexer"
