"""Which parameters one synthetic batch's loss reaches, found without weights and without a GPU.

A trainable parameter that no path from the loss reaches gets no gradient: DDP stops with
"Expected to have finished reduction", FSDP2 leaves its gradient ``None`` and the optimizer keeps
no state for it. Each build worker runs, on the model it just built, one forward per data mix its
requests ask for (:class:`~mmfreeze.models.structure.MixesToProbe`: a recipe's known mixes, or every
mix the forward takes when a recipe's is unknown) with the class's batch for it
(:mod:`~mmfreeze.models.probe.batches`), every parameter trainable, and keeps the names the loss
does not reach in the structure (:class:`~mmfreeze.models.structure.Probe`):

- on a shrunken config (every depth kept, tiny widths: :mod:`~mmfreeze.models.probe.shrink`) with
  real tensors on the CPU and constant weights, built once per model and shared by its mixes: image,
  video and audio batches, and the text batch of a class that has one of those (its shrunken config
  is known to run, and ATen's kernels run a forward about ten times faster than the meta device's
  Python decompositions);
- at full size under ``FakeTensorMode`` first where the image path allows it (LLaVA's image mix:
  the real widths, about a second for 7B);
- on the meta device for the text batch of every other class (text-only models, and classes with no
  other batch yet), then with fake tensors, then shrunken;
- a composite (``Gemma4WithDrafter``) whole, shrunken only: the framework's own class over both
  parts shrunken, the loss its base's logits and every drafter step's.

Every method walks the autograd graph from the loss (:mod:`~mmfreeze.models.probe.graph`): what a
backward would leave without a gradient, without running it (tests compare the two name by name).
Each mix of one config and class is probed once per run, whatever builder or Auto class a recipe
reaches it through (:func:`mmfreeze.models.loader.build_structure`), and a cached structure gains
the probes a later request asks for.

Each probe names the method that gave it; a mix no method could run says why, and where the
model's code raised. Which mixes a
recipe's batches carry, and what the result means for its trainable set, is
:mod:`mmfreeze.reachability`'s (a layer above).
"""
