"""Synthetic in-memory batches for ``tests/nemo/test_memory_exact.py``: the recipe's ``dataset``,
``processor`` and ``dataloader.collate_fn`` ``_target_``s (the real ones download). The batch layout is
the framework's VLM collators' (labels pre-shifted), as in ``tests/nemo/train_worker.py`` and
``stock_launch/stock_launch_data.py``; ``spec`` says what the model's config needs (kind ``llava``,
``qwen2_5_vl``, ``qwen2_audio``, or ``text`` for token ids alone), computed by the test from the tiny config.
"""

from __future__ import annotations

from typing import Any


def synthetic_dataset(*, spec: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """``size`` seeded examples: token ids with the model's placeholder run, and its media input."""
    import torch

    examples = []
    for index in range(size):
        generator = torch.Generator().manual_seed(1000 + index)
        ids = torch.randint(0, spec["text_vocab"], (spec["seq_len"],), generator=generator)
        run = torch.tensor(spec["placeholders"])
        ids[2:2 + len(run)] = run
        examples.append({"input_ids": ids, "media": torch.randn(*spec["media_shape"], generator=generator)})
    return examples


def no_processor(**_: Any) -> None:
    """The ``processor._target_``: none (the default downloads one)."""
    return None


def synthetic_collate(examples: list[dict[str, Any]], processor: Any = None, *, spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    ids = torch.stack([e["input_ids"] for e in examples])
    labels = ids.masked_fill(ids >= spec["text_vocab"], -100)  # no loss on media tokens
    labels = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], dim=1)  # labels[t] = ids[t+1]
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    media = [e["media"] for e in examples]
    if spec["kind"] == "llava":
        batch["pixel_values"] = torch.stack(media)
    elif spec["kind"] == "qwen2_5_vl":
        batch["pixel_values"] = torch.cat(media)
        batch["image_grid_thw"] = torch.tensor([spec["grid"]] * len(examples))
        batch["mm_token_type_ids"] = (ids == spec["image_token_id"]).int()
    elif spec["kind"] == "qwen2_audio":  # log-mel features, every frame real
        batch["input_features"] = torch.stack(media)
        batch["feature_attention_mask"] = torch.ones(len(examples), spec["media_shape"][1], dtype=torch.long)
    return batch
