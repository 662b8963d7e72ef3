"""Cold and warm `mmfreeze snapshot --check` of the bundled corpus, and `mmfreeze migrate --check` of
the pre-migration fixtures (model structures already cached: parsing, planning, rewriting and
proving alone): this checkout against a revision.

    python benchmarks/check_cost_vs_revision.py ce5d876               # median of 3 cold and 3 warm runs each
    python benchmarks/check_cost_vs_revision.py ce5d876 --repeats 7   # when 3 runs are too noisy to tell
    python benchmarks/check_cost_vs_revision.py ce5d876 --same-corpus # both check this checkout's corpus

A change may not make the corpus check more than 10% slower without saying why. Timings on this
machine move by about 10% from run to run and more from day to day, so both revisions are measured
here, interleaved, in one run: each revision checks its own `example_configs/` against its own
snapshots made in an environment like this one (`environment_snapshots`), its code imported from a `git worktree` of the revision (put first on PYTHONPATH).

Each run gives its wall time and the CPU time of its whole process tree (the command, its
forkserver and build workers). Ratios are given twice: of the medians, and the median of each
repeat's own ratio, which cancels the machine's drift between repeats.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus_check import REPEATS, Run, environment_snapshots, mmfreeze  # noqa: E402


def checkout(revision: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), revision],
                   check=True, capture_output=True)
    return into


KINDS = ("cold", "warm", "migrate")
PRE_MIGRATION = Path("tests") / "migrate" / "fixtures" / "pre_migration"


def measure(code: Path, corpus: Path, scratch: Path, label: str, repeat: int) -> tuple[Run, Run, Run]:
    work = scratch / f"{label}-{repeat}"
    shutil.copytree(corpus / "example_configs", work / "example_configs")
    shutil.copytree(environment_snapshots(corpus), work / "snapshots")
    shutil.copytree(corpus / PRE_MIGRATION, work / "pre_migration")
    cache = scratch / f"cache-{label}-{repeat}"
    os.environ["PYTHONPATH"] = str(code)
    cold = mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache)
    warm = mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache)
    migrate_cache = scratch / "cache-migrate"  # shared: the first run builds, every timed run reads it
    if not migrate_cache.exists():
        mmfreeze("migrate", "--check", ".", cwd=work / "pre_migration", cache=migrate_cache)
    migrate = mmfreeze("migrate", "--check", ".", cwd=work / "pre_migration", cache=migrate_cache)
    return cold, warm, migrate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revision", help="the revision to compare with, e.g. the last landed commit")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"interleaved cold+warm runs per revision (default {REPEATS}); more narrows the medians")
    parser.add_argument("--same-corpus", action="store_true",
                        help="check this checkout's corpus and snapshots with both revisions' code: the cost of the "
                             "code alone, where the corpus or its snapshots changed since the revision")
    args = parser.parse_args()
    runs: dict[str, list[tuple[Run, Run, Run]]] = {"this checkout": [], args.revision: []}
    with tempfile.TemporaryDirectory(prefix="mmfreeze-rev-") as scratch_name:
        scratch = Path(scratch_name)
        old = checkout(args.revision, scratch / "worktree")
        try:
            for repeat in range(args.repeats):
                for label, code in (("this checkout", REPO), (args.revision, old)):
                    corpus = REPO if args.same_corpus else code
                    runs[label].append(measure(code, corpus, scratch, label.replace(" ", "-"), repeat))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=False)
    for label, pairs in runs.items():
        kinds = "; ".join(f"{kind} {_runs(seconds, 's wall')}, {_runs(cpu, 's CPU')}" for kind, seconds, cpu in _kinds(pairs))
        print(f"{label}: {kinds}; exit codes {sorted({run.exit_code for pair in pairs for run in pair})}")
    for (kind, new_wall, new_cpu), (_, old_wall, old_cpu) in zip(_kinds(runs["this checkout"]), _kinds(runs[args.revision])):
        print(f"{kind}: {_ratios(new_wall, old_wall)} of {args.revision} in wall time, "
              f"{_ratios(new_cpu, old_cpu)} in CPU time")
    return 0


def _kinds(pairs: list[tuple[Run, Run, Run]]) -> list[tuple[str, list[float], list[float]]]:
    """Per kind (cold, warm, migrate): each repeat's wall seconds and CPU seconds."""
    return [(kind, [pair[index].seconds for pair in pairs], [pair[index].cpu_seconds for pair in pairs])
            for index, kind in enumerate(KINDS)]


def _runs(values: list[float], unit: str) -> str:
    return f"{statistics.median(values):.2f}{unit} (runs {', '.join(f'{value:.2f}' for value in values)})"


def _ratios(new: list[float], old: list[float]) -> str:
    """The ratio of the medians, and the median of each repeat's own ratio: runs a few seconds apart
    share the machine's state, which drifts over minutes on this shared host more than a budget's margin."""
    own = statistics.median(n / o for n, o in zip(new, old))
    return f"{statistics.median(new) / statistics.median(old):.2f}x (median of the {len(new)} repeats' own ratios: {own:.2f}x)"


if __name__ == "__main__":
    raise SystemExit(main())
