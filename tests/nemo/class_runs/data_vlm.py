"""Synthetic, in-memory input pipelines for the ``vlm`` group of class runs (``run_class.py``): VLM
fine-tuning and distillation. The batches are those of ``tests/nemo/train_worker.py`` (the layout of
the framework's VLM collators), sized from the model's own config folder."""

from __future__ import annotations

from functools import cache
from typing import Any

from tests.nemo.train_worker import batch_spec, synthetic_collate, synthetic_dataset


@cache
def _spec(config_dir: str) -> dict[str, Any]:
    from transformers import AutoConfig

    return batch_spec(AutoConfig.from_pretrained(config_dir))


def image_text_examples(config_dir: str, size: int = 4) -> list[dict[str, Any]]:
    """The recipe's ``dataset._target_``: token ids with an image placeholder run, and pixels."""
    return synthetic_dataset(_spec(config_dir), size)


def image_text_collate(examples: list[dict[str, Any]], processor: Any = None, *, config_dir: str) -> dict[str, Any]:
    """The recipe's ``dataloader.collate_fn``: ``input_ids``, ``attention_mask``, shifted ``labels``, pixels."""
    return synthetic_collate(examples, processor, spec=_spec(config_dir))
