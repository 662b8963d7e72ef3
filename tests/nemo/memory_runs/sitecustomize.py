"""Test-only ``sitecustomize`` for ``tests/nemo/test_memory_exact.py``: the CPU stubs, the memory probe and
context parallelism's attention on the CPU (:mod:`cpu_attention_rule`, which the probe registers).

The launch puts this folder first on ``PYTHONPATH`` and ``tests/nemo/stock_launch`` second (its
two ``torch.cuda`` stubs are reused from ``stock_launch_probe``; its own ``sitecustomize`` is skipped,
as it would chain back to this one). Only torchrun workers
(``LOCAL_RANK`` and ``TORCHELASTIC_RUN_ID`` set) with ``MEMORY_RUN_OUT`` set install
:mod:`memory_probe`; the next ``sitecustomize`` on ``sys.path`` outside both folders (a
distribution's) still runs. Nothing here imports mmfreeze.
"""

import os
import sys


def _install() -> None:
    if os.environ.get("MEMORY_RUN_OUT") and "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        import memory_probe

        memory_probe.install()


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path``, which this module shadows."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    ours = {here, os.path.join(os.path.dirname(here), "stock_launch")}  # stock_launch's chains back to this one
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) not in ours]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_install()
_chain()
