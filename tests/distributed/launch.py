"""Start a 2-rank worker script, wait up to a deadline, kill what is left: nothing can hang CI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RANKS = 2


@dataclass(frozen=True)
class RankRun:
    codes: list[int | None]
    killed: list[int]
    """Ranks still running at the deadline (killed)."""
    seconds: float


def launch_ranks(worker: Path, arguments: list[str], out: Path, *, deadline_s: float) -> RankRun:
    """Run ``worker RANK 2 *arguments`` for both ranks; each rank's output goes to ``out/log<rank>``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, str(worker), str(rank), str(RANKS), *arguments],
            stdout=(out / f"log{rank}").open("w"), stderr=subprocess.STDOUT, env=env,
        )
        for rank in range(RANKS)
    ]
    killed = []
    for rank, proc in enumerate(procs):
        try:
            proc.wait(timeout=max(0.1, deadline_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            killed.append(rank)
    return RankRun(codes=[p.returncode for p in procs], killed=killed, seconds=time.monotonic() - started)
