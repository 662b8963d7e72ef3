"""What the build forkserver imports once, before it forks a worker per build: torch and transformers'
model classes (seconds each), quietly (:mod:`mmfreeze.models.quiet`; the workers stay so), and the loader
the workers run."""

from mmfreeze.models.quiet import quiet_imports, quiet_workers

quiet_workers()
with quiet_imports():
    import torch  # noqa: F401
    import transformers.modeling_utils  # noqa: F401
    import transformers.models.auto.modeling_auto  # noqa: F401

    import mmfreeze.models.loader  # noqa: F401
