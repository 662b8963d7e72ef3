"""Cold and warm `mmfreeze snapshot --check` of the bundled corpus: this checkout against a revision.

    python benchmarks/check_cost_vs_revision.py ce5d876               # median of 3 cold and 3 warm runs each
    python benchmarks/check_cost_vs_revision.py ce5d876 --repeats 7   # when 3 runs are too noisy to tell

A change may not make the corpus check more than 10% slower without saying why. Timings on this
machine move by about 10% from run to run and more from day to day, so both revisions are measured
here, interleaved, in one run: each revision checks its own `example_configs/` against its own
`snapshots/`, its code imported from a `git worktree` of the revision (put first on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus_check import REPEATS, Run, median, mmfreeze  # noqa: E402


def checkout(revision: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), revision],
                   check=True, capture_output=True)
    return into


def measure(code: Path, scratch: Path, label: str, repeat: int) -> tuple[Run, Run]:
    work = scratch / f"{label}-{repeat}"
    shutil.copytree(code / "example_configs", work / "example_configs")
    shutil.copytree(code / "snapshots", work / "snapshots")
    cache = scratch / f"cache-{label}-{repeat}"
    os.environ["PYTHONPATH"] = str(code)
    cold = mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache)
    warm = mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache)
    return cold, warm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revision", help="the revision to compare with, e.g. the last landed commit")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"interleaved cold+warm runs per revision (default {REPEATS}); more narrows the medians")
    args = parser.parse_args()
    runs: dict[str, list[tuple[Run, Run]]] = {"this checkout": [], args.revision: []}
    with tempfile.TemporaryDirectory(prefix="mmfreeze-rev-") as scratch_name:
        scratch = Path(scratch_name)
        old = checkout(args.revision, scratch / "worktree")
        try:
            for repeat in range(args.repeats):
                for label, code in (("this checkout", REPO), (args.revision, old)):
                    runs[label].append(measure(code, scratch, label.replace(" ", "-"), repeat))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=False)
    results = {}
    for label, pairs in runs.items():
        cold = median([c for c, _ in pairs], key=lambda run: run.seconds)
        warm = median([w for _, w in pairs], key=lambda run: run.seconds)
        results[label] = (cold, warm)
        colds = ", ".join(f"{c.seconds:.2f}" for c, _ in pairs)
        warms = ", ".join(f"{w.seconds:.2f}" for _, w in pairs)
        print(f"{label}: cold {cold.seconds:.2f}s (runs {colds}; exit {cold.exit_code}), "
              f"warm {warm.seconds:.2f}s (runs {warms}; exit {warm.exit_code})")
    (new_cold, new_warm), (old_cold, old_warm) = results["this checkout"], results[args.revision]
    print(f"cold: {new_cold.seconds / old_cold.seconds:.2f}x of {args.revision}; "
          f"warm: {new_warm.seconds / old_warm.seconds:.2f}x of {args.revision} (target: at most 1.10x each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
