"""Which trainable parameters the loss never reaches, per recipe and data mix (issue 25).

A trainable parameter that no path from the loss reaches gets no gradient: DDP stops with
"Expected to have finished reduction", FSDP2 leaves its gradient ``None`` and the optimizer keeps
no state for it. The build workers probe each model once per data mix its recipes' batches carry
(:mod:`mmfreeze.models.probe`, every parameter trainable; every mix the forward takes where a
recipe's is unknown); here a recipe's answer is read off those probes:

- :mod:`~mmfreeze.reachability.mix`: which mixes the recipe's batches carry (declared, implied by
  the dataset builder, or every plausible one, said to be unknown);
- :mod:`~mmfreeze.reachability.recipe`: per mix, the probe's unreached names the recipe trains,
  grouped by resolved module, or why the mix was not probed.

Snapshots store the result (:mod:`mmfreeze.snapshots.format`), `explain` gives the verdict
(:mod:`mmfreeze.explain.reach`) and the guard checks gradients at run time (:mod:`mmfreeze.guard.gradients`).
"""
