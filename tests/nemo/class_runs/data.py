"""Synthetic, in-memory input pipelines for the class runs (``run_class.py``): the recipes' own
datasets download. Each function is a recipe's ``_target_``; each returns what the class's own
collator or loop reads, at the tiny models' sizes (vocabulary 128)."""

from __future__ import annotations

from typing import Any

VOCAB = 128
SEQ_LEN = 12


def token_examples(size: int = 8, seq_len: int = SEQ_LEN, seed: int = 0) -> list[dict[str, Any]]:
    """Next-token examples in the layout of the framework's LLM datasets: ``input_ids``, ``labels``
    (shifted by the dataset, as ``format_utils`` does) and ``attention_mask``, as lists of ints."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    examples = []
    for _ in range(size):
        ids = torch.randint(3, VOCAB, (seq_len + 1,), generator=generator).tolist()
        examples.append({"input_ids": ids[:-1], "labels": ids[1:], "attention_mask": [1] * seq_len})
    return examples
