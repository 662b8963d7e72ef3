"""What `mmfreeze snapshot --check` costs on a corpus, against the naive way and against the floor.

    python benchmarks/corpus_check.py            # full measurement (about 13 minutes on 2 cores)
    python benchmarks/corpus_check.py --smoke    # CI: every step runs on a few recipes, nothing timed is judged

Every figure is measured in this run, in fresh processes; "cold" starts with an empty cache
(structures and frozen sets), "warm" is the same command again on the cache the cold run left:

1. cold check vs the naive way (each recipe in its own fresh process, its model built there);
2. cold check vs the floor (one torch + transformers import, plus the sum of one meta build per
   distinct config divided by the workers);
3. warm check vs cold, and whether the warm run imported torch or transformers;
4. `migrate --check` per recipe on the pre-migration corpus, structures already cached;
5. peak memory of the cold runs (the whole process tree's proportional set size, sampled);
6. wall time of 1,000 generated recipes against 100, over the same distinct configs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from generate_corpus import generate_corpus  # noqa: E402

CORPUS = REPO / "example_configs"


def environment_snapshots(code: Path = REPO) -> Path:
    """The bundled recipes' snapshots made in an environment like this one, so that a check measures
    the check and not a release switch: the committed ones where they are made (nemo-automodel's
    pin), else the transformers classes' of the installed release, kept as a test fixture."""
    from mmfreeze.versions import installed_version

    installed = installed_version("transformers")
    fixture = code / "tests" / "snapshots" / "fixtures" / f"transformers-{installed}"
    return fixture if installed != snapshot_release(code) and fixture.is_dir() else code / "snapshots"


def snapshot_release(code: Path = REPO) -> str:
    """The transformers release the committed snapshots name in their headers."""
    first = next((code / "snapshots").rglob("*.frozen.txt"))
    return next(line.split(": ", 1)[1] for line in first.read_text().splitlines() if line.startswith("transformers: "))
PRE_MIGRATION = REPO / "tests" / "migrate" / "fixtures" / "pre_migration"
WORKERS = len(os.sched_getaffinity(0))
T = TypeVar("T")
REPEATS = 3
"""Cold, warm and floor are the median of this many runs: this machine's timings vary by 10%."""
SMOKE_FILES = ("vlm_finetune/qwen2_vl/qwen2_vl_2b_cord_v2.yaml", "vlm_peft/phi4_multimodal/phi4_mm_lora_vision_cord.yaml")
"""``--smoke`` takes these two recipes (and their pre-migration originals), two of the corpus's
quickest models to build cold, and grows 2 -> 4 generated recipes: enough to run every step, and it
judges no time."""


@dataclass(frozen=True)
class Run:
    seconds: float
    exit_code: int
    output: str
    peak_pss_bytes: int | None = None
    cpu_seconds: float = 0.0
    """User and system CPU of the whole process tree (the command, its forkserver, the build workers)."""


PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (linux/prctl.h)."""


def _adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (Linux ``PR_SET_CHILD_SUBREAPER``):
    the forkserver outlives the command that started it, and is then reparented here instead of to
    init, so waiting for it adds its CPU, and that of the workers it reaped, to ``RUSAGE_CHILDREN``."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def mmfreeze(*args: str, cwd: Path, cache: Path | None, measure_memory: bool = False) -> Run:
    """Run the CLI in a fresh process and wait until its whole process tree is gone.

    ``measure_memory`` samples the tree's PSS every 50 ms. Reading ``smaps`` of processes that
    hold torch costs real CPU (measured: it slowed a cold run by a third on 2 cores), so timed
    runs are never sampled; memory gets runs of its own."""
    env = {**os.environ, "CI": "true"}
    if cache is not None:
        env["MMFREEZE_CACHE_DIR"] = str(cache)
    command = [sys.executable, "-m", "mmfreeze", *args] + (["--no-cache"] if cache is None else [])
    _adopt_orphans()
    cpu_before = _children_cpu()
    # Output goes to a file, not a pipe: a report larger than the pipe buffer would block the run.
    with tempfile.TemporaryFile("w+") as log:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        watcher = PssWatcher(process.pid) if measure_memory else None
        if watcher is not None:
            watcher.start()
        process.wait()  # the time is taken here, not at the watcher's next poll
        seconds = time.perf_counter() - started
        if watcher is not None:
            watcher.finished.set()
            watcher.join()
        # The forkserver outlives the command by a second or so while its interpreter shuts
        # down; the next measurement must not share the cores with it. Every process of the tree
        # that outlives its parent is this process's child now (_adopt_orphans): reaping them all
        # waits for the tree to be gone and counts its CPU.
        with contextlib.suppress(ChildProcessError):
            while True:
                os.waitpid(-1, 0)
        log.seek(0)
        return Run(seconds, process.returncode, log.read(), None if watcher is None else watcher.peak,
                   cpu_seconds=_children_cpu() - cpu_before)


class PssWatcher(threading.Thread):
    """The peak of a running tree's summed PSS, sampled every 50 ms: shared library pages
    (copy-on-write after fork) are split between the processes that map them instead of being
    counted once per process as RSS would."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.peak = 0
        self.finished = threading.Event()

    def run(self) -> None:
        while not self.finished.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_full_info().pss for p in tree if p.is_running()))
            except psutil.Error:
                pass  # a process of the tree ended between listing and reading
            self.finished.wait(0.05)


def median(items: list[T], key: Callable[[T], float]) -> T:
    return sorted(items, key=key)[len(items) // 2]


@dataclass(frozen=True)
class Floor:
    imported: float
    """Seconds of ``import torch, transformers``."""
    builds: float
    """Summed seconds of one meta build per distinct config, in one process."""
    model_code: float
    """Part of ``builds``: the first build's import of transformers' model base (modeling_utils),
    which ``import transformers`` leaves for later and every build needs."""
    distinct: int

    def seconds(self, workers: int) -> float:
        return self.imported + self.builds / workers


def measure_floor(recipes: list[Path]) -> Floor:
    """The floor's parts, measured in one fresh process."""
    script = f"""
import json, sys, time
from pathlib import Path
started = time.perf_counter()
import torch, transformers
imported = time.perf_counter() - started
from mmfreeze.models.cache import structure_key
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.loader import build_model, find_config
from mmfreeze.recipes.recipe import load_recipe
distinct = {{}}
for path in map(Path, {[str(p) for p in recipes]!r}):
    recipe = load_recipe(path)
    source = find_config(model_request(recipe))
    distinct.setdefault(structure_key(source.config, recipe.model.auto_class), (source.config, recipe.model.auto_class))
started = time.perf_counter()
import transformers.modeling_utils
model_code = time.perf_counter() - started
builds = model_code
for config, auto_class in distinct.values():
    started = time.perf_counter()
    build_model(config, auto_class, source="floor")
    builds += time.perf_counter() - started
print(json.dumps([imported, builds, model_code, len(distinct)]))
"""
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return Floor(*json.loads(output.strip().splitlines()[-1]))


def warm_imports_heavy(targets: list[str], cache: Path, cwd: Path) -> bool:
    script = f"""
import os, sys
os.environ["MMFREEZE_CACHE_DIR"] = {str(cache)!r}
os.environ["CI"] = "true"
from mmfreeze.cli.main import cli
try:
    cli(["snapshot", "--check", "-q", *{targets!r}])
except SystemExit:
    pass
print("HEAVY" if {{"torch", "transformers"}} & set(sys.modules) else "LIGHT")
"""
    output = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True).stdout
    return output.strip().splitlines()[-1] == "HEAVY"


def naive(recipes: list[Path], cwd: Path) -> float:
    """Each recipe in its own fresh process, building its own model, as a per-recipe test runner would."""
    started = time.perf_counter()
    for recipe in recipes:
        mmfreeze("snapshot", "--check", "-q", str(recipe.relative_to(cwd)), cwd=cwd, cache=None)
    return time.perf_counter() - started


def _seconds(runs: list[Run], digits: int = 1) -> str:
    return ", ".join(f"{run.seconds:.{digits}f}" for run in runs)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few recipes, for CI: checks the script runs")
    parser.add_argument("--check-only", action="store_true",
                        help="the cold and the warm check of the whole corpus alone (the README's main job, warm)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mmfreeze-bench-") as scratch:
        if args.check_only:
            return check_only(Path(scratch), repeats=REPEATS)
        return run_all(Path(scratch), smoke=args.smoke, repeats=1 if args.smoke else REPEATS)


def check_only(scratch: Path, *, repeats: int) -> int:
    """Median cold and warm `snapshot --check` of the whole corpus, each from its own fresh cache."""
    work = scratch / "repo"
    shutil.copytree(CORPUS, work / "example_configs")
    shutil.copytree(environment_snapshots(), work / "snapshots")
    colds, warms = [], []
    for repeat in range(repeats):
        cache = scratch / f"cache-{repeat}"
        colds.append(mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache))
        warms.append(mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache))
    cold, warm = median(colds, key=lambda run: run.seconds), median(warms, key=lambda run: run.seconds)
    print(f"cold check: {cold.seconds:.1f}s, median of {_seconds(colds)} (exit {cold.exit_code}); "
          f"warm check: {warm.seconds:.2f}s, median of {_seconds(warms, 2)} (exit {warm.exit_code}; target <= 1 s)")
    return 0 if cold.exit_code == warm.exit_code == 0 else 1


def run_all(scratch: Path, *, smoke: bool, repeats: int) -> int:
    work = scratch / "repo"
    shutil.copytree(CORPUS, work / "example_configs")
    shutil.copytree(environment_snapshots(), work / "snapshots")
    shutil.copytree(PRE_MIGRATION, work / "pre_migration")
    recipes = sorted((work / "example_configs").rglob("*.yaml"))
    # A subset is given as files, so snapshots of the other recipes are not orphans.
    recipes = [work / "example_configs" / name for name in SMOKE_FILES] if smoke else recipes
    targets = [str(p.relative_to(work)) for p in recipes] if smoke else ["example_configs"]
    lines = [f"workers: {WORKERS}; recipes: {len(recipes)}"]

    colds, warms = [], []
    for repeat in range(repeats):
        cache = scratch / f"cache-cold-{repeat}"
        colds.append(mmfreeze("snapshot", "--check", "-q", *targets, cwd=work, cache=cache))
        warms.append(mmfreeze("snapshot", "--check", "-q", *targets, cwd=work, cache=cache))
    cold, warm = median(colds, key=lambda run: run.seconds), median(warms, key=lambda run: run.seconds)
    memory = [
        mmfreeze("snapshot", "--check", "-q", *targets, cwd=work, cache=scratch / f"cache-memory-{repeat}", measure_memory=True)
        for repeat in range(repeats)
    ]
    peak = max(run.peak_pss_bytes or 0 for run in memory)
    heavy = warm_imports_heavy(targets, scratch / "cache-cold-0", work)
    floors = [measure_floor(recipes) for _ in range(repeats)]
    floor = median(floors, key=lambda f: f.seconds(WORKERS))
    naive_seconds = naive(recipes, work)
    lines += [
        f"cold check: {cold.seconds:.1f}s, median of {_seconds(colds)} (exit {cold.exit_code}); distinct configs: {floor.distinct}",
        f"1. naive (one fresh process per recipe): {naive_seconds:.1f}s -> cold is {ratio(naive_seconds, cold.seconds)} faster (target >= 10x)",
        f"2. floor: import {floor.imported:.1f}s + builds {floor.builds:.1f}s / {WORKERS} workers = {floor.seconds(WORKERS):.1f}s, "
        f"median of {', '.join(f'{f.seconds(WORKERS):.1f}' for f in floors)} -> cold/floor {ratio(cold.seconds, floor.seconds(WORKERS))} (target <= 1.3x); "
        f"the builds include {floor.model_code:.1f}s for the first one's import of transformers.modeling_utils",
        f"3. warm check: {warm.seconds:.2f}s, median of {_seconds(warms, 2)} -> warm/cold {warm.seconds / cold.seconds:.1%} (target < 10%); "
        f"torch/transformers imported when warm: {'yes' if heavy else 'no'}",
        f"5. peak memory of a cold run (process tree PSS sampled every 50 ms, in {len(memory)} separate untimed runs, highest): {peak / 2**20:.0f} MiB (target < 1024 MiB)",
    ]
    lines.append(migrate_per_recipe(work, scratch, smoke=smoke))
    lines.append(growth(work, scratch, smoke=smoke))
    print("\n".join(lines))
    return 0 if cold.exit_code == 0 else 1


def migrate_per_recipe(work: Path, scratch: Path, *, smoke: bool) -> str:
    files = sorted((work / "pre_migration").rglob("*.yaml")) + sorted((work / "pre_migration").rglob("*.py"))
    files = [work / "pre_migration" / name for name in SMOKE_FILES] if smoke else files
    targets = [str(p.relative_to(work)) for p in files]
    count = len(files)
    cache = scratch / "cache-migrate"
    mmfreeze("migrate", "--check", *targets, cwd=work, cache=cache)  # fills the cache: builds are excluded
    timed = mmfreeze("migrate", "--check", *targets, cwd=work, cache=cache)
    return f"4. migrate --check, structures cached: {timed.seconds:.1f}s for {count} files = {timed.seconds / count * 1000:.0f} ms per file"


def growth(work: Path, scratch: Path, *, smoke: bool) -> str:
    sizes = (2, 4) if smoke else (100, 1000)
    seconds = []
    for size in sizes:
        folder = work / f"generated_{size}"
        generate_corpus(work / "example_configs", folder, size, only=SMOKE_FILES if smoke else ())
        relative = folder.name
        mmfreeze("snapshot", "--update", "-q", relative, cwd=work, cache=scratch / f"cache-accept-{size}")
        seconds.append(mmfreeze("snapshot", "--check", "-q", relative, cwd=work, cache=scratch / f"cache-{size}").seconds)
    small, large = seconds
    return (f"6. cold check of {sizes[1]} generated recipes: {large:.1f}s vs {sizes[0]}: {small:.1f}s "
            f"-> {ratio(large, small)} (target < 1.5x)")


if __name__ == "__main__":
    raise SystemExit(main())
