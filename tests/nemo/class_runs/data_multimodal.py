"""Synthetic, in-memory input pipeline and CPU substitutions for the BAGEL class runs
(``recipes/multimodal_finetune.yaml``, ``recipes/multimodal_pretrain.yaml``; ``run_class.py``).

The multimodal recipes (``nemo_automodel/recipes/multimodal/finetune.py``) build their data through
the typed ``dataset:`` section (``BagelDatasetConfig``, no ``_target_``): ``PackedDataset`` looks each
``grouped_datasets`` name up in ``datasets.DATASET_REGISTRY``, whose three datasets read prepared
files (JSONL rows and image folders, parquet shards). :func:`synthetic_bagel_datasets` registers two
more names, ``synthetic_vlm_sft`` and ``synthetic_t2i``, whose rows are made in memory in the layouts
``SftJSONLIterableDataset`` and ``T2IIterableDataset`` yield (images through the group's own
``ImageTransform``); the framework's own ``PackedDataset`` packs them and its ``bagel_packed_collate_fn``
batches them.

BAGEL's attention kernels are GPU-only: :func:`cpu_packed_attention` replaces exactly those two calls
(see there); the recipe's bf16 autocast names the CUDA device: :func:`cpu_autocast` (see there);
Stage 2 needs the autoencoder's ``ae.safetensors``: :func:`vae_without_weights_file` (see there).
Sizes match ``tests/nemo/models/tiny-bagel`` (vocabulary 128; ViT patch 4: 16x16 ViT images;
VAE downsample 8 x latent patch 2 = stride 16: 32x32 VAE images).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

VOCAB = 128
FIRST_TEXT_ID = 5  # ids 0-4 are <pad> and BAGEL's four special tokens in tiny-bagel's tokenizer


def _plan(kind: str, *, loss: int, enable_cfg: int = 0) -> dict[str, Any]:
    """One ``sequence_plan`` entry, as the framework's datasets write them."""
    return {"type": kind, "enable_cfg": enable_cfg, "loss": loss, "special_token_loss": 0, "special_token_label": None}


def _synthetic_dataset_class(kind: str) -> type:
    """The in-memory dataset class for ``kind``: ``vlm_sft`` rows (the schema of
    ``SftJSONLIterableDataset``: an image for the ViT, a prompt without loss, an answer with CE
    loss) or ``t2i`` rows (the schema of ``T2IIterableDataset``: a caption, droppable for
    classifier-free guidance, then an image for the VAE with flow-matching loss)."""
    from nemo_automodel.components.datasets.multimodal.distributed_iterable import DistributedIterableDataset

    class SyntheticBagelDataset(DistributedIterableDataset):
        """Seeded in-memory rows: random pixels through the group's own ``image_transform_args``
        transform and random words of the tiny tokenizer's vocabulary through its ``encode``.
        ``dataset_info`` still names a ``data_dir`` (``PackedDataset.build_datasets`` reads the key);
        nothing is read from it. ``num_used_data`` is the number of rows."""

        def __init__(self, dataset_name, transform, tokenizer, data_dir_list, num_used_data, local_rank=0,
                     world_size=1, num_workers=8, data_status=None, prompt_len=4, answer_len=6, seed=0):
            super().__init__(dataset_name, local_rank, world_size, num_workers)
            self.transform = transform
            self.tokenizer = tokenizer
            self.prompt_len = prompt_len
            self.answer_len = answer_len
            self.seed = seed
            self.set_data_status(data_status)
            self.data_paths = [f"row-{i:04d}" for i in range(sum(num_used_data))]
            self.set_epoch()

        def _row(self, row: str) -> dict[str, Any]:
            import numpy as np
            from PIL import Image

            rng = np.random.default_rng(self.seed + int(row.split("-")[1]))
            side = self.transform.resize_transform.max_size
            pixels = rng.integers(0, 256, size=(side, side, 3), dtype=np.uint8)
            image_tensor = self.transform(Image.fromarray(pixels, mode="RGB"), img_num=1)
            words = lambda n: " ".join(f"t{i}" for i in rng.integers(FIRST_TEXT_ID, VOCAB, size=n))  # noqa: E731
            height, width = image_tensor.shape[1:]
            image_tokens = width * height // self.transform.stride ** 2
            if kind == "t2i":
                caption_ids = self.tokenizer.encode(words(self.prompt_len))
                return dict(image_tensor_list=[image_tensor], text_ids_list=[caption_ids],
                            sequence_plan=[_plan("text", loss=0, enable_cfg=1), _plan("vae_image", loss=1)],
                            num_tokens=image_tokens + len(caption_ids))
            prompt_ids = self.tokenizer.encode(words(self.prompt_len))
            answer_ids = self.tokenizer.encode(words(self.answer_len))
            return dict(image_tensor_list=[image_tensor], text_ids_list=[prompt_ids, answer_ids],
                        sequence_plan=[_plan("text", loss=0), _plan("vit_image", loss=0), _plan("text", loss=1)],
                        num_tokens=image_tokens + len(prompt_ids) + len(answer_ids))

        def __iter__(self):
            rows, worker_id = self.get_data_paths_per_worker()
            while True:
                for row_idx, row in enumerate(rows):
                    sample = self._row(row)
                    sample["data_indexes"] = {"data_indexes": row_idx, "worker_id": worker_id,
                                              "dataset_name": self.dataset_name}
                    self._set_worker_resume_data_status(worker_id, row_idx)
                    yield sample

    SyntheticBagelDataset.__name__ = SyntheticBagelDataset.__qualname__ = f"Synthetic_{kind}_Dataset"
    return SyntheticBagelDataset


@contextlib.contextmanager
def synthetic_bagel_datasets() -> Iterator[None]:
    """Adds ``synthetic_vlm_sft`` and ``synthetic_t2i`` (:func:`_synthetic_dataset_class`) to
    ``nemo_automodel.components.datasets.multimodal.datasets.DATASET_REGISTRY``, the registry
    ``PackedDataset.build_datasets`` resolves ``dataset.grouped_datasets`` names in. Why: the
    registered datasets read prepared files from disk (the public recipes' ``/path/to/bagel_data``),
    and the BAGEL ``dataset:`` section accepts no ``_target_``; nothing already registered is changed."""
    from unittest import mock

    from nemo_automodel.components.datasets.multimodal import datasets

    added = {"synthetic_vlm_sft": _synthetic_dataset_class("vlm_sft"), "synthetic_t2i": _synthetic_dataset_class("t2i")}
    with mock.patch.dict(datasets.DATASET_REGISTRY, added):
        yield


@contextlib.contextmanager
def vae_without_weights_file() -> Iterator[None]:
    """Replaces ``nemo_automodel.recipes.multimodal.finetune._resolve_bagel_vae_path`` so that it
    returns ``None``. Why: for Stage 2 the recipe resolves ``ae.safetensors`` (``model.vae_path``,
    the checkpoint directory, or a Hugging Face download) and there is no weights file here; with
    ``None`` the recipe's own ``_load_bagel_vae`` -> ``load_bagel_autoencoder(None)`` builds the
    framework's BAGEL/FLUX autoencoder (``default_autoencoder_params()``) with random weights, which
    the recipe then freezes, keeps outside the trained model, and uses to encode the images."""
    from unittest import mock

    from nemo_automodel.recipes.multimodal import finetune

    with mock.patch.object(finetune, "_resolve_bagel_vae_path", lambda model_path, vae_path: None):
        yield


def _varlen_sdpa(q, k, v, *, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None, causal=False,
                 **_: Any):
    """``flash_attn_varlen_func`` on CPU: the same packed (total, heads, dim) attention, one
    segment of ``cu_seqlens`` at a time through ``scaled_dot_product_attention``."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    out = []
    bounds_q, bounds_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for (q0, q1), (k0, k1) in zip(zip(bounds_q, bounds_q[1:]), zip(bounds_k, bounds_k[1:])):
        segment = scaled_dot_product_attention(q[q0:q1].transpose(0, 1), k[k0:k1].transpose(0, 1),
                                               v[k0:k1].transpose(0, 1), is_causal=causal)
        out.append(segment.transpose(0, 1))
    return torch.cat(out, dim=0)


@contextlib.contextmanager
def cpu_packed_attention() -> Iterator[None]:
    """Replaces the two GPU-only attention calls of BAGEL's training forward, nothing else:

    * ``modeling_qwen2_packed.sdpa_kernel``: the packed Qwen2 attention (nested masks) calls
      ``scaled_dot_product_attention`` under ``sdpa_kernel(backends=[SDPBackend.EFFICIENT_ATTENTION])``,
      a kernel torch has only on CUDA ("No viable backend" on CPU); here the same call may also
      use the math backend.
    * ``modeling_siglip_navit._flash_attn_varlen``: the ViT's packed attention calls
      ``flash_attn.flash_attn_varlen_func`` (CUDA only, not installed); here :func:`_varlen_sdpa`
      computes the same segment-wise attention with ``scaled_dot_product_attention``.
    """
    from unittest import mock

    from torch.nn.attention import SDPBackend, sdpa_kernel

    from nemo_automodel.components.models.bagel import modeling_qwen2_packed, modeling_siglip_navit

    def sdpa_kernel_with_math(backends, *args, **kwargs):
        backends = list(backends) if isinstance(backends, (list, tuple)) else [backends]
        return sdpa_kernel([*backends, SDPBackend.MATH], *args, **kwargs)

    with mock.patch.object(modeling_qwen2_packed, "sdpa_kernel", sdpa_kernel_with_math), \
            mock.patch.object(modeling_siglip_navit, "_flash_attn_varlen", _varlen_sdpa):
        yield


@contextlib.contextmanager
def cpu_autocast() -> Iterator[None]:
    """Replaces ``torch.amp.autocast`` so that a ``"cuda"`` autocast without a GPU is the same
    autocast on ``"cpu"``. Why: the recipe runs the VAE encode and the model forward under
    ``torch.amp.autocast("cuda", dtype=torch.bfloat16)`` (``_forward_backward_step``), which torch
    disables without CUDA; the model then mixes fp32 inputs (ViT patches) with the bf16 weights
    of FSDP2's ``mp_policy`` and its packed attention's bf16 outputs ("mat1 and mat2 must have the
    same dtype"). Every other device type, and every call with a GPU present, is unchanged."""
    from unittest import mock

    import torch

    original = torch.amp.autocast

    def autocast(device_type: str, *args: Any, **kwargs: Any) -> Any:
        if device_type == "cuda" and not torch.cuda.is_available():
            device_type = "cpu"
        return original(device_type, *args, **kwargs)

    with mock.patch.object(torch.amp, "autocast", autocast):
        yield
