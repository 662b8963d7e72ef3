"""Test-only ``sitecustomize``: the CPU stubs and the parameter probe for a stock torchrun launch.

``tests/nemo/test_stock_launch.py`` puts this folder (and nothing else of the repository) on
``PYTHONPATH`` of one ``torchrun --nproc-per-node 2 -m nemo_automodel.cli.app recipe.yaml``
subprocess. Python imports ``sitecustomize`` at start-up in every process of that run; only the
torchrun workers (``LOCAL_RANK`` and ``TORCHELASTIC_RUN_ID`` set, the framework's own test in
``components/launcher/interactive.py``) with ``STOCK_LAUNCH_OUT`` set install
:mod:`stock_launch_probe`. Any other ``sitecustomize`` further down ``sys.path`` (a distribution's)
still runs afterwards. Nothing here imports mmfreeze.
"""

import os
import sys


def _install() -> None:
    if os.environ.get("STOCK_LAUNCH_OUT") and "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        import stock_launch_probe

        stock_launch_probe.install()


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path``, which this module shadows."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_install()
_chain()
