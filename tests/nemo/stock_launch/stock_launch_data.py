"""Synthetic in-memory LLaVA inputs for ``tests/nemo/test_stock_launch.py``: the recipe's
``dataset``, ``processor`` and ``dataloader.collate_fn`` ``_target_``s (the real ones download a
data set and a processor). nemo-automodel resolves them by dotted name because this folder is on
the launch's ``PYTHONPATH`` (``components/config/loader.py``, ``_is_allowed_module``: importable
modules are allowed). The batch layout is the framework's VLM collators' (labels pre-shifted),
as in ``tests/nemo/train_worker.py``.
"""

from __future__ import annotations

from typing import Any

import stock_launch_probe


def synthetic_llava_dataset(*, image_token_id: int, image_tokens: int, pixel_shape: list[int], text_vocab: int,
                            seq_len: int, size: int) -> list[dict[str, Any]]:
    """``size`` seeded examples: token ids with a run of ``image_tokens`` image placeholders, and pixels."""
    import torch

    stock_launch_probe.check_no_mmfreeze("dataset build")
    examples = []
    for index in range(size):
        generator = torch.Generator().manual_seed(1000 + index)
        ids = torch.randint(0, text_vocab, (seq_len,), generator=generator)
        ids[2:2 + image_tokens] = image_token_id
        examples.append({"input_ids": ids, "pixel_values": torch.randn(*pixel_shape, generator=generator)})
    return examples


def no_processor(**_: Any) -> None:
    """The ``processor._target_``: none (the default downloads one)."""
    return None


def synthetic_collate(examples: list[dict[str, Any]], processor: Any = None, *, text_vocab: int) -> dict[str, Any]:
    import torch

    ids = torch.stack([e["input_ids"] for e in examples])
    labels = ids.masked_fill(ids >= text_vocab, -100)  # no loss on image tokens
    labels = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], dim=1)  # labels[t] = ids[t+1]
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels,
            "pixel_values": torch.stack([e["pixel_values"] for e in examples])}
