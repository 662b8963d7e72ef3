"""Context parallelism's attention on the CPU, for the memory runs of ``tests/nemo/test_memory_exact.py``.

Torch's context parallelism (``torch.distributed.tensor.experimental.context_parallel``) brings its ring
attention for the CUDA kernels alone (flash, efficient, cuDNN). On this CPU-only machine SDPA runs
``aten._scaled_dot_product_flash_attention_for_cpu``, for which DTensor has no rule, so a stock
``cp_size: 2`` run of a transformers class stops in its first forward ("does not have a sharding strategy
registered"). This registers one through torch's public ``register_sharding``: each rank's queries
against the whole sequence's keys and values (all-gathered), their gradients reduce-scattered back.

It is the one thing in these runs that is not stock, and it cannot change what is measured: the attention's
numbers are not a GPU run's (the causal mask is not the ring's), but which parameters, gradients and optimizer
states each rank holds is decided by the FSDP2 layout over the ``dp_shard_cp`` mesh, before any attention runs.
Without context parallelism no DTensor reaches this kernel, so the rule is never consulted:
:data:`CONSULTED` says which of the two rules DTensor asked for since the probe's last reset, and the
test holds every other case to none.
"""

from __future__ import annotations

CONSULTED: set[str] = set()
"""``forward`` / ``backward``: the rules DTensor's sharding propagation asked for (it caches their answers)."""


def register() -> None:
    import torch
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.experimental import register_sharding

    aten = torch.ops.aten
    sequence = Shard(2)  # (batch, heads, sequence, head_dim)

    @register_sharding(aten._scaled_dot_product_flash_attention_for_cpu.default)
    def forward(query, key, value, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None):
        CONSULTED.add("forward")
        # (output, logsumexp) from (query, key, value, dropout_p, is_causal)
        return [([Replicate(), Replicate()], [Replicate(), Replicate(), Replicate(), None, None]),
                ([sequence, sequence], [sequence, Replicate(), Replicate(), None, None])]

    @register_sharding(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
    def backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask=None, scale=None):
        CONSULTED.add("backward")
        # (grad_query, grad_key, grad_value) from (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal)
        return [([Replicate()] * 3, [Replicate()] * 6 + [None, None]),
                ([sequence, Partial(), Partial()], [sequence, sequence, Replicate(), Replicate(), sequence, sequence,
                                                   None, None])]
