"""Arms mmfreeze in the processes a `mmfreeze train` launch starts; touches nothing else.

On ``PYTHONPATH`` only under a launch (or the one line `mmfreeze train --env RECIPE` prints). In
every interpreter it first runs the ``sitecustomize`` it shadows, then, and only when
``MMFREEZE_NEMO_INSTALL=1``, in the launch's own environment (``sys.prefix``), and not in a
multiprocessing helper (a DataLoader worker, the resource tracker), it hands over to
:mod:`mmfreeze.nemo.activate`, which imports nothing heavy until torch or the framework is
imported. Anywhere else it costs one environment look-up and imports nothing of mmfreeze.
"""

import os
import sys


def _run_shadowed_sitecustomize() -> None:
    import importlib
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [entry for entry in sys.path if str(Path(entry or ".").resolve()) != here]
    try:
        importlib.import_module("sitecustomize")
    except ModuleNotFoundError as error:
        if error.name != "sitecustomize":
            raise
    finally:
        sys.path[:] = saved
        if ours is not None:
            sys.modules["sitecustomize"] = ours


def _launched_here() -> bool:
    if os.environ.get("MMFREEZE_NEMO_INSTALL") != "1":
        return False
    if os.environ.get("MMFREEZE_NEMO_PREFIX") not in (None, sys.prefix):
        return False  # another virtual environment: mmfreeze is not installed there
    argv = getattr(sys, "orig_argv", sys.argv)
    return not ("--multiprocessing-fork" in argv or any(arg.startswith("from multiprocessing.") for arg in argv))


if _launched_here():
    try:
        _run_shadowed_sitecustomize()
    except BaseException as error:  # noqa: BLE001  a run that cannot be set up as its launch says must not start
        print(f"mmfreeze train: the environment's own sitecustomize failed ({type(error).__name__}: {error}); "
              "the run is stopped, since it would train without the guard", file=sys.stderr, flush=True)
        os._exit(3)
    from mmfreeze.nemo.activate import activate

    activate()
else:
    _run_shadowed_sitecustomize()
