"""Several recipes, one after another, in one torchrun worker, each through the stock entry point.

``torchrun --nproc-per-node N -m run_recipes PLAN.json`` runs every ``[recipe, out]`` pair of the
plan in turn, calling ``nemo_automodel.cli.app.main`` with ``argv = [recipe]``: in a torchrun worker
it runs the recipe in-process (``InteractiveLauncher``), and the framework's
``initialize_distributed`` keeps the process group the first recipe made. One launch per world
size pays the ranks' startup (about 7 s of imports each) once instead of once per recipe.

Before each recipe the memory probe is reset and ``MEMORY_RUN_OUT`` names that recipe's folder;
after it, ``done<R>.json`` there says whether rank R finished it (``error`` holds the traceback).
A recipe that fails does not stop the next one. Nothing here imports mmfreeze.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import traceback
from pathlib import Path


def main() -> None:
    import memory_probe
    from nemo_automodel.cli import app

    rank = os.environ.get("RANK", "0")
    for recipe, out in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
        os.environ["MEMORY_RUN_OUT"] = out
        memory_probe.reset()
        sys.argv = ["automodel", recipe]
        error = None
        try:
            app.main()
        except BaseException:  # noqa: BLE001 - recorded for the test, and the next recipe still runs
            error = traceback.format_exc()
            print(error, file=sys.stderr, flush=True)
        gc.collect()  # the recipe's model, optimizer and teacher go before the next recipe looks for them
        # What outlives a recipe is the process's own (modules, classes, caches): out of the collector's
        # reach, the next recipe's collection and the probe's object scans pass over only its own objects.
        gc.freeze()
        (Path(out) / f"done{rank}.json").write_text(json.dumps({"error": error}), encoding="utf-8")


if __name__ == "__main__":
    main()
