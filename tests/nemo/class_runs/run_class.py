"""Train one recipe class of nemo-automodel 0.7.0 for its first optimizer steps, in one CPU process.

    mmfreeze train -- python tests/nemo/class_runs/run_class.py RECIPE.yaml OUT.json [--unfreeze PARAMETER]

The recipe names its class (``recipe:``, a dotted path) and its own synthetic input pipeline
(``_target_`` values in ``tests/nemo/class_runs/data*.py``): nothing downloads. This process is
rank 0 of a world of 1 on gloo; it reads the recipe with the framework's own loader, builds the
class, and runs ``setup()`` and ``run_train_validation_loop()`` as the framework's ``main`` does,
under :func:`tests.nemo.train_worker.cpu_substitutions` (the ``torch.cuda`` calls the framework makes
without checking for a GPU) and the context managers the recipe lists under
``class_run: {substitutions: [dotted.path]}`` (a top-level key the framework ignores), each of which
says in its docstring what it replaces and why. ``--unfreeze PARAMETER`` sets one frozen parameter
of the trained model trainable after ``setup()``: a model changed after setup, which the guard must
stop before the first step.

OUT.json records the class, whether the run finished, the error if any, and every substitution
made; the guard's own line goes to stderr (the test reads it there).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.distributed.launch import free_port  # noqa: E402
from tests.nemo.train_worker import cpu_substitutions, recipe_class  # noqa: E402


def substitutions(cfg: Any) -> list[Any]:
    """The recipe's own substitutions (``class_run.substitutions``), entered in order."""
    names = (cfg.get("class_run", None) or {}).get("substitutions", None) or []
    return [getattr(importlib.import_module(module), name) for module, _, name in map(lambda n: n.rpartition("."), names)]


@contextlib.contextmanager
def single_process() -> Iterator[None]:
    """Rank 0 of a world of 1, as torchrun would set it."""
    for name, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}.items():
        os.environ.setdefault(name, value)
    yield


def run(recipe_path: str, *, unfreeze: str | None) -> dict[str, Any]:
    import torch
    from nemo_automodel.components.config.loader import load_yaml_config

    torch.set_num_threads(1)
    result: dict[str, Any] = {"recipe": recipe_path, "class": None, "unfreeze": unfreeze, "finished": False, "error": None,
                              "traceback": None, "cuda_substitutions": [], "substitutions": []}
    try:
        cfg = load_yaml_config(recipe_path)
        cls = recipe_class(cfg)
        result["class"] = cls.__name__
        with single_process(), cpu_substitutions(result["cuda_substitutions"]), contextlib.ExitStack() as stack:
            for substitution in substitutions(cfg):
                stack.enter_context(substitution())
                result["substitutions"].append(f"{substitution.__module__}.{substitution.__name__}")
            recipe = cls(cfg)
            recipe.setup()
            if unfreeze is not None:
                dict(recipe.model_parts[0].named_parameters())[unfreeze].requires_grad_(True)  # the trained model
            recipe.run_train_validation_loop()
        result["finished"] = True
    except Exception as error:  # recorded for the test, which asserts on it
        result["error"] = f"{type(error).__name__}: {error}"
        result["traceback"] = traceback.format_exc()
    return result


def main(argv: list[str]) -> int:
    recipe, out, *options = argv
    unfreeze = options[1] if options[:1] == ["--unfreeze"] else None
    result = run(recipe, unfreeze=unfreeze)
    Path(out).write_text(json.dumps(result, indent=1))
    return 0 if result["finished"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
