"""Start a 2-rank worker script, wait up to a deadline, kill what is left: nothing can hang CI.

Both halves of the protocol live here: :func:`launch_ranks` (test side) starts the ranks,
:func:`join_process_group` (worker side) joins them into one gloo group and a 1-D ``dp`` mesh.
"""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

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
    killed = wait_all(procs, deadline_s=deadline_s, started=started)
    return RankRun(codes=[p.returncode for p in procs], killed=killed, seconds=time.monotonic() - started)


def free_port() -> int:
    """A TCP port free on the loopback address now (for a process group's rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_all(procs: list[subprocess.Popen], *, deadline_s: float, started: float) -> list[int]:
    """Wait for every process until ``started + deadline_s``; kill the ones still running then
    (a hung rank must fail the test, not the CI job) and return their ranks."""
    killed = []
    for rank, proc in enumerate(procs):
        try:
            proc.wait(timeout=max(0.1, deadline_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            killed.append(rank)
    return killed


def join_process_group(rank: str, world: str, store_file: str, timeout_s: str) -> tuple[int, DeviceMesh]:
    """Worker side: join the gloo group through the file store and return ``(rank, dp mesh)``.

    Arguments are the worker's command-line strings, as :func:`launch_ranks` passes them; the
    caller calls ``dist.destroy_process_group()`` when done."""
    rank_index, world_size = int(rank), int(world)
    torch.set_num_threads(1)  # two ranks share two cores
    store = dist.FileStore(store_file, world_size)
    dist.init_process_group(
        "gloo", store=store, rank=rank_index, world_size=world_size,
        timeout=datetime.timedelta(seconds=float(timeout_s)),
    )
    return rank_index, init_device_mesh("cpu", (world_size,), mesh_dim_names=("dp",))
