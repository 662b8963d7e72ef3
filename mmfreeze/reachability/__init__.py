"""Which trainable parameters the loss never reaches, before any GPU is used (issue 25, first part).

A trainable parameter that no path from the loss reaches gets no gradient: DDP stops with
"Expected to have finished reduction", FSDP2 leaves its gradient ``None`` and the optimizer keeps
no state for it. Here a model runs one forward on a synthetic batch of one data mix, without
weights, and the autograd graph from the loss is walked (:mod:`~mmfreeze.reachability.graph`):

- text only, on the meta device (:func:`~mmfreeze.reachability.probe.text_only_on_meta`);
- with an image, at full size under ``FakeTensorMode``, where the model's multimodal code allows
  it (:func:`~mmfreeze.reachability.probe.image_with_fake_tensors`; the LLaVA family so far).

- with an image on a shrunken config (every depth kept, tiny widths) with real tensors on the CPU,
  where fake tensors stop at a data-dependent guard (Qwen2-VL, Qwen2.5-VL, Gemma-3).

Each result names the method that gave it. The mixes to ask for come from the recipe
(:mod:`~mmfreeze.reachability.mix`: declared, implied by the dataset builder, or every plausible
one). Not yet here: the video and audio batches, the snapshot section, `explain`'s verdict and the
run-time check (see the issue).
"""
