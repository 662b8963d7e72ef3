"""The CPU a cold check spends building the bundled corpus's models, one build at a time.

    python benchmarks/build_cost.py             # every bundled recipe's structure, probed for its mixes, largest first
    python benchmarks/build_cost.py --top 10

A cold `mmfreeze snapshot --check` spreads these builds (meta-device model, structure, checkpoint
renames, reachability probes) over one worker per core, each with one torch thread; here they run
in this process the same way (one thread, a fresh cache, builds of one config together), so the
per-build seconds add up to the CPU the workers share. The first build of a process also pays
its model code's imports, as a worker's does.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=15, help="how many of the largest builds to list (default 15)")
    args = parser.parse_args()

    import torch

    from mmfreeze.exceptions import MmfreezeError
    from mmfreeze.models.batch import BuildTick, build_missing
    from mmfreeze.models.cache import StructureCache
    from mmfreeze.reachability.recipe import probed_request
    from mmfreeze.recipes.recipe import load_recipe

    torch.set_num_threads(1)
    requests = []
    for path in sorted((REPO / "example_configs").rglob("*.yaml")):
        try:
            requests.append(probed_request(load_recipe(path)))
        except MmfreezeError:  # a recipe the snapshot run also skips
            continue
    ticks: list[BuildTick] = []
    with tempfile.TemporaryDirectory(prefix="mmfreeze-build-cost-") as cache_dir:
        started = time.perf_counter()
        failed = build_missing(requests, StructureCache(Path(cache_dir)), workers=1, on_tick=ticks.append)
        total = time.perf_counter() - started
    print(f"{len(ticks)} builds for {len(requests)} recipes ({len(failed)} failed): "
          f"{sum(tick.seconds for tick in ticks):.1f} s of builds, {total:.1f} s in all")
    for tick in sorted(ticks, key=lambda tick: -tick.seconds)[:args.top]:
        print(f"{tick.seconds:7.2f} s  {tick.built:42s} {tick.model_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
