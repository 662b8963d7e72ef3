"""Installs mmfreeze's nemo-automodel integration at interpreter start, for `mmfreeze train` runs.

Only on ``PYTHONPATH`` when `mmfreeze train` launched the process; it does nothing unless
``MMFREEZE_NEMO_INSTALL=1``. A ``sitecustomize`` it shadows (later on ``sys.path``) still runs.
"""

import importlib
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)


def _run_shadowed_sitecustomize() -> None:
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [entry for entry in sys.path if str(Path(entry or ".").resolve()) != _HERE]
    try:
        importlib.import_module("sitecustomize")
    except ModuleNotFoundError:
        pass
    finally:
        sys.path[:] = saved
        if ours is not None:
            sys.modules["sitecustomize"] = ours


_run_shadowed_sitecustomize()

from mmfreeze.nemo.launch import activate_from_environment  # noqa: E402

activate_from_environment()
