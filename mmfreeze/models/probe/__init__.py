"""Which parameters one synthetic batch's loss reaches, found without weights and without a GPU.

A trainable parameter that no path from the loss reaches gets no gradient: DDP stops with
"Expected to have finished reduction", FSDP2 leaves its gradient ``None`` and the optimizer keeps
no state for it. Each build worker runs, on the model it just built, one forward per data mix the
model's class has a batch for (:mod:`~mmfreeze.models.probe.batches`), every parameter trainable,
and keeps the names the loss does not reach in the structure (:class:`~mmfreeze.models.structure.Probe`):

- on the meta device, the autograd graph walked from the loss (:mod:`~mmfreeze.models.probe.graph`),
  for text-only batches;
- at full size under ``FakeTensorMode``, where the model's multimodal code allows it (LLaVA);
- otherwise on a shrunken config (every depth kept, tiny widths: :mod:`~mmfreeze.models.probe.shrink`)
  with real tensors on the CPU, by each parameter's ``.grad`` after a real backward.

Each probe names the method that gave it; a mix no method could run says why. Which mixes a
recipe's batches carry, and what the result means for its trainable set, is
:mod:`mmfreeze.reachability`'s (a layer above).
"""
