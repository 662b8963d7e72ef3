"""How long the test suite takes from a clean clone, against the targets, measured in one run.

    python benchmarks/suite_times.py                 # a fresh clone of HEAD in a temporary folder
    python benchmarks/suite_times.py --ci            # also `.ci/run` as a whole (both environments)

Targets on 2 cores (issue 22): the README's test command, install included, at most 10 minutes;
``pytest -m "not slow"`` at most 2 minutes; ``.ci/run`` at most 20 minutes. Each figure is one
wall-clock measurement of this run, printed with its target; nothing is stored.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS_S = {"README test command": 600, 'pytest -m "not slow"': 120, ".ci/run": 1200}


def readme_test_command() -> str:
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", quick_start, flags=re.S)[1]


def timed(label: str, command: str, cwd: Path) -> float:
    started = time.monotonic()
    completed = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                               env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home()), "CI": "true"})
    seconds = time.monotonic() - started
    summary = completed.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"{label}: {seconds:,.0f} s (target {TARGETS_S[label]:,} s, {seconds / TARGETS_S[label]:.2f}x of it); "
          f"exit {completed.returncode}; {summary[0]}", flush=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ci", action="store_true", help="also time .ci/run in a second fresh clone")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mmfreeze-suite-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        timed("README test command", readme_test_command(), clone)
        timed('pytest -m "not slow"', '.venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow"', clone)
        if options.ci:
            again = Path(scratch) / "ci"
            subprocess.run(["git", "clone", "-q", str(REPO), str(again)], check=True)
            timed(".ci/run", "bash .ci/run", again)
    return 0


if __name__ == "__main__":
    sys.exit(main())
