"""What `mmfreeze train` adds to an interpreter it starts (issue 41's goal: under 50 ms where it does nothing).

    python benchmarks/launch_overhead.py              # median of 21 interleaved runs each
    python benchmarks/launch_overhead.py --repeats 51

Each command runs with and without the launch's environment (`activation_environment` for a
recipe nemo-automodel runs natively), interleaved, in one run: `python -c pass` (an unrelated
tool), and `python -c "import torch"` (a process that imports torch's optimizers, where the guard's
hooks are registered, and never steps one: a compile worker, a data tool).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mmfreeze.nemo.launch import activation_environment

COMMANDS = {"python -c pass": "pass", "python -c 'import torch'": "import torch"}


def seconds(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        recipe = Path(scratch) / "recipe.yaml"
        recipe.write_text("model: {}\nfreeze_config:\n  freeze_modules: [{path: model.visual}]\n")
        plain = dict(os.environ)
        armed = activation_environment(recipe, guard=None)
        for label, code in COMMANDS.items():
            seconds(code, plain), seconds(code, armed)  # warm the file cache
            pairs = [(seconds(code, plain), seconds(code, armed)) for _ in range(args.repeats)]
            without = statistics.median(a for a, _ in pairs)
            with_launch = statistics.median(b for _, b in pairs)
            added = statistics.median(b - a for a, b in pairs)
            print(f"{label}: {without * 1000:.0f} ms without the launch, {with_launch * 1000:.0f} ms under it: "
                  f"+{added * 1000:.0f} ms (median of {args.repeats} interleaved pairs' own differences; "
                  f"ratio {with_launch / without:.2f}x)")


if __name__ == "__main__":
    main()
