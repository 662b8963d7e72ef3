"""Synthetic, in-memory input pipelines for the ``llm`` group of class runs (``run_class.py``):
fine-tuning, sequence classification, knowledge distillation, benchmarking and diffusion-LM fine-tuning. The
framework's own datasets for these recipes download; each function here is a recipe's
``_target_`` and returns what the class's own collator or loop reads, at the tiny models' sizes
(vocabulary 128)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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


def classification_examples(size: int = 8, seq_len: int = SEQ_LEN, num_labels: int = 2,
                            seed: int = 0) -> list[dict[str, Any]]:
    """Sequence-classification examples in the layout of the framework's ``GLUE_MRPC``:
    ``input_ids`` and ``attention_mask`` as lists of ints, ``labels`` a one-element list (the class
    index), which ``default_collater`` stacks to ``[B, 1]``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    examples = []
    for index in range(size):
        ids = torch.randint(3, VOCAB, (seq_len,), generator=generator).tolist()
        examples.append({"input_ids": ids, "attention_mask": [1] * seq_len, "labels": [index % num_labels]})
    return examples


def unshifted_examples(size: int = 8, seq_len: int = SEQ_LEN, prompt_len: int = 4, first_id: int = 4,
                       seed: int = 0) -> list[dict[str, Any]]:
    """Diffusion-LM examples in the unshifted layout ``DLLMCollator`` reads (what the framework's
    ``ChatDataset(unshifted=True)`` yields): ``input_ids``, ``loss_mask`` (0 on a prompt of
    ``prompt_len`` tokens, then 1 on one contiguous response) and ``attention_mask``, as lists of
    ints. Ids start at ``first_id`` so the ids below it (pad, bos, eos, and 3 as the recipes'
    ``dllm.mask_token_id``) never occur in the text."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    examples = []
    for _ in range(size):
        ids = torch.randint(first_id, VOCAB, (seq_len,), generator=generator).tolist()
        loss_mask = [0] * prompt_len + [1] * (seq_len - prompt_len)
        examples.append({"input_ids": ids, "loss_mask": loss_mask, "attention_mask": [1] * seq_len})
    return examples


@contextlib.contextmanager
def pretrained_weights_not_loaded() -> Iterator[None]:
    """Replace the loading of a ``from_pretrained`` model's checkpoint weights
    (``Checkpointer.load_base_model`` with ``load_base_model=True``) by the framework's own
    ``load_base_model=False`` path: the model keeps the weights the framework initialised, exactly
    as ``from_config`` leaves them.

    Why: knowledge distillation reads ``model.pretrained_model_name_or_path`` and
    ``teacher_model.pretrained_model_name_or_path`` (``kd._verify_tokenizer_compatibility``), so
    both must be ``from_pretrained`` sections, and ``from_pretrained`` then loads (in real use,
    downloads) safetensors weights; the bundled tiny models have none. Model building, its
    materialisation on CPU, weight tying and the freezing are the framework's own."""
    from nemo_automodel.components.checkpoint.checkpointing import Checkpointer

    original = Checkpointer.load_base_model

    def load_base_model(self: Any, model: Any, device: Any, root_dir: Any, model_name: Any,
                        load_base_model: bool = True) -> None:
        original(self, model, device, root_dir, model_name, load_base_model=False)

    Checkpointer.load_base_model = load_base_model
    try:
        yield
    finally:
        Checkpointer.load_base_model = original


@contextlib.contextmanager
def wandb_not_installed() -> Iterator[None]:
    """Replace the ``wandb`` module, only when it is not installed, by one whose ``run`` is
    ``None`` (what ``wandb.run`` is when no W&B run was started).

    Why: ``BenchmarkingRecipeForNextTokenPrediction.setup`` does ``import wandb`` unconditionally
    (``self.wandb_run = wandb.run``), while W&B is an optional extra of nemo-automodel
    (``nemo-automodel[wandb]``) that the framework environment does not install; with no ``wandb``
    section the recipe only reads ``wandb.run`` (None) and never logs. An installed ``wandb`` is
    left alone."""
    import importlib.util
    import sys
    import types

    if importlib.util.find_spec("wandb") is not None:
        yield
        return
    stub = types.ModuleType("wandb", "stand-in for the W&B client, which is not installed")
    stub.run = None
    sys.modules["wandb"] = stub
    try:
        yield
    finally:
        if sys.modules.get("wandb") is stub:
            del sys.modules["wandb"]


@contextlib.contextmanager
def timers_on_cpu() -> Iterator[None]:
    """Replace the two ``torch.cuda`` calls of the framework's ``Timers``
    (``components/training/timers.py``), which the benchmarking recipe wraps around ``setup()``,
    for that module only (its global ``torch`` is seen through a view that differs in these two):

    * ``torch.cuda.synchronize`` (``_Timer.start`` / ``stop``): a no-op; it raises without a GPU,
      and CPU work has finished when the call returns.
    * ``torch.cuda.current_device()``, the device of the tensor ``_get_elapsed_time_all_ranks``
      all-gathers the timings in: ``cpu`` (the gloo backend's device) instead of a GPU index.
    """
    import types

    import torch
    from nemo_automodel.components.training import timers

    class _View(types.ModuleType):
        def __init__(self, name: str, target: Any, **overrides: Any) -> None:
            super().__init__(name)
            self.__dict__.update(overrides)
            self._target = target

        def __getattr__(self, name: str) -> Any:
            return getattr(self._target, name)

    cuda = _View("torch.cuda", torch.cuda, synchronize=lambda *_, **__: None,
                 current_device=lambda: torch.device("cpu"))
    saved = timers.torch
    timers.torch = _View("torch", torch, cuda=cuda)
    try:
        yield
    finally:
        timers.torch = saved
