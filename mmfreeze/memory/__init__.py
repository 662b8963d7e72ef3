"""What a recipe costs per rank: bytes of parameters, gradients and optimizer states under FSDP2.

``shards`` (dim-0 padded sharding), ``layout`` (the framework's FSDP2 units), ``optimizer`` (state per
parameter), ``dtypes``, ``model`` (the pure estimate) and ``recipe`` (a recipe's inputs, as
nemo-automodel 0.7.0 runs it). Activations are out of scope. Rules: ``docs/memory.md``.
"""
