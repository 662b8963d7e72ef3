"""The compiler: a `(modality, role)` source turned into what nemo-automodel 0.7 runs natively, and
the check that keeps the two in step.

- :mod:`.selectors`: the fewest 0.7 `freeze_modules` / `unfreeze_modules` selectors for a frozen set;
- :mod:`.rates`: each selector rate entry as a pattern of exactly its tensors;
- :mod:`.target`: the environment a compile is made for and proven in (`compiled_for`);
- :mod:`.sections`: the sections compiled and proven on the model the run built;
- :mod:`.check`: `snapshot --check`'s hold on them;
- :mod:`.recipe`: both for one recipe, on the structure the run built for it (what `migrate` and the
  snapshot call).

Reading the layout (the source under `mmfreeze:`, the compiled sections where the framework reads
them) is :mod:`mmfreeze.recipes.layout`, a layer below; writing it is `migrate`'s rule MF006
(:mod:`mmfreeze.migrate.yaml.native_compile`).
"""
