"""How long the test suite takes from a clean clone, against the targets, measured in one run.

    python benchmarks/suite_times.py                 # a fresh clone of HEAD in a temporary folder
    python benchmarks/suite_times.py --ci            # also `.ci/run` as a whole (both environments)

Both README commands run in the clone, each with its exit code: the main job (the framework's
environment, install included, then the check of every bundled recipe), then the test command.
Targets on 2 cores (issue 22): the README's test command, install included, at most 10 minutes;
``pytest -m "not slow"`` at most 2 minutes; ``.ci/run`` at most 20 minutes. The main job has no
target of its own; it is printed for the record. Each figure is one wall-clock measurement of this
run, printed with its target; nothing is stored.
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


def readme_commands() -> tuple[str, str]:
    """The README's main job and its test command."""
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    main_job, test_command = re.findall(r"```bash\n(.*?)\n```", quick_start, flags=re.S)
    return main_job, test_command


def timed(label: str, command: str, cwd: Path) -> float:
    started = time.monotonic()
    completed = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                               env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home()), "CI": "true"})
    seconds = time.monotonic() - started
    summary = completed.stdout.strip().splitlines()[-1:] or ["(no output)"]
    target = f"target {TARGETS_S[label]:,} s, {seconds / TARGETS_S[label]:.2f}x of it" if label in TARGETS_S else "no target"
    print(f"{label}: {seconds:,.0f} s ({target}); exit {completed.returncode}; {summary[0]}", flush=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ci", action="store_true", help="also time .ci/run in a second fresh clone")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mmfreeze-suite-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        main_job, test_command = readme_commands()
        timed("README main job", main_job, clone)
        timed("README test command", test_command, clone)
        timed('pytest -m "not slow"', '.venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow"', clone)
        if options.ci:
            again = Path(scratch) / "ci"
            subprocess.run(["git", "clone", "-q", str(REPO), str(again)], check=True)
            timed(".ci/run", "bash .ci/run", again)
    return 0


if __name__ == "__main__":
    sys.exit(main())
