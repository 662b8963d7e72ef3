"""What `mmfreeze.verify_frozen_set` costs at training start, on bundled recipes' models on meta.

    python benchmarks/verify_cost.py            # four model sizes, median of 9 calls each
    python benchmarks/verify_cost.py --smoke    # CI: the smallest model, 1 call; nothing is judged

Each recipe's model is built on the meta device and set up as training would leave it (LoRA
adapters injected when the recipe has `peft:`, its frozen set applied, an AdamW over the
trainable parameters); that set-up is not timed. Then, from the repository root (so the committed
snapshot is found the default way), every figure is measured in this run:

- ``verify``: one whole call with the optimizer, single process (median of the repeats, after
  one warm-up call; the first call of the process is shown separately, it imports the guard);
- ``snapshot read``: finding, reading, parsing and expanding the snapshot, alone;
- ``model read``: reading the live model's canonical names and flags, alone;
- ``peak heap``: Python allocations during one call (tracemalloc, in a separate untimed call);
- the rank exchange: two gloo processes (TCPStore on localhost) verify the same small model, with
  the exchange and without it (``peer_timeout=None``); the difference is what sharing verdicts
  costs per call.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CASES = (
    ("SmolVLM2-2.2B, LoRA", "example_configs/vlm_peft/smolvlm/smolvlm2_lora_cauldron.yaml"),
    ("Qwen2.5-VL-7B, tower frozen", "example_configs/vlm_finetune/qwen2_5_vl/qwen2_5_vl_7b_cord_v2.yaml"),
    ("Qwen2.5-VL-72B, LoRA", "example_configs/vlm_peft/qwen2_5_vl/qwen2_5_vl_72b_lora_docvqa.yaml"),
    ("Kimi K2.5 (1T MoE), LoRA", "example_configs/vlm_peft/kimi_k25/kimi_k25_lora_docvqa.yaml"),
)
REPEATS = 9


@dataclass(frozen=True)
class Row:
    name: str
    parameters: int
    tensors: int
    frozen: int
    first_call: float
    verify: float
    snapshot_read: float
    model_read: float
    peak_heap: int


def set_up(recipe_path: str):
    """The recipe's model on meta as training leaves it, and an optimizer over its trainable parameters."""
    import torch

    from mmfreeze.freeze.apply import apply_frozen_set
    from mmfreeze.freeze.engine import compute_frozen_set
    from mmfreeze.freeze.recipe_model import model_request
    from mmfreeze.models.loader import build_requested_model, find_config
    from mmfreeze.models.lora import add_live_lora_adapters, lora_targets, parse_peft_section
    from mmfreeze.models.structure import structure_of
    from mmfreeze.recipes.recipe import load_recipe
    from mmfreeze.resolver.overrides import override_specs

    recipe = load_recipe(Path(recipe_path))
    request = model_request(recipe)
    model = build_requested_model(request, find_config(request))
    structure = structure_of(model)
    result = compute_frozen_set(structure, recipe.document, source=recipe.display_path,
                                override_specs=override_specs(recipe.module_overrides))
    if recipe.peft is not None:
        spec = parse_peft_section(recipe.peft, source=recipe.display_path)
        add_live_lora_adapters(model, lora_targets(structure, spec, result.rules.release), spec)
    apply_frozen_set(model, result.frozen)
    return model, torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])


def median_seconds(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def peak_heap(call: Callable[[], object]) -> int:
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def measure(name: str, recipe_path: str, repeats: int, *, first: bool) -> Row:
    model, optimizer = set_up(recipe_path)
    started = time.perf_counter()
    from mmfreeze import verify_frozen_set  # the guard's modules load here, as in a training script

    result = verify_frozen_set(model, recipe_path, optimizer=optimizer)
    first_call = time.perf_counter() - started
    from mmfreeze.guard.live import read_live_model
    from mmfreeze.guard.locate import find_snapshot, read_snapshot

    def read_stored() -> object:
        return read_snapshot(find_snapshot(Path(recipe_path), None), recipe=Path(recipe_path)).frozen

    def verify() -> object:
        return verify_frozen_set(model, recipe_path, optimizer=optimizer)

    return Row(
        name=name, parameters=sum(p.numel() for p in model.parameters()), tensors=result.tensors,
        frozen=result.frozen_tensors, first_call=first_call if first else float("nan"),
        verify=median_seconds(verify, repeats), snapshot_read=median_seconds(read_stored, repeats),
        model_read=median_seconds(lambda: read_live_model(model), repeats), peak_heap=peak_heap(verify),
    )


def write_small_snapshot(root: Path) -> None:
    """A two-layer model's recipe and snapshot under ``root`` (first layer frozen)."""
    from mmfreeze.freeze.engine import compute_frozen_set
    from mmfreeze.models.structure import structure_of
    from mmfreeze.snapshots.format import render_snapshot
    from mmfreeze.snapshots.compute import snapshot_of

    (root / "r.yaml").write_text("model: {}\n")
    result = compute_frozen_set(structure_of(small_model()), {}, source="r.yaml", override_specs=())
    snapshot = snapshot_of(result, recipe="r.yaml", model_id="small", config="local")
    (root / "snapshots").mkdir()
    (root / "snapshots" / "r.yaml.frozen.txt").write_text(render_snapshot(snapshot))


def small_model():
    from torch import nn

    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    model[0].requires_grad_(False)
    return model


def rank_main(rank: int, port: int, root: str, repeats: int) -> None:
    import torch.distributed as dist

    from mmfreeze import verify_frozen_set

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    os.chdir(root)
    model = small_model()
    verify_frozen_set(model, "r.yaml")
    exchanged = median_seconds(lambda: verify_frozen_set(model, "r.yaml"), repeats)
    alone = median_seconds(lambda: verify_frozen_set(model, "r.yaml", peer_timeout=None), repeats)
    Path(root, f"rank{rank}.json").write_text(json.dumps({"exchanged": exchanged, "alone": alone}))
    dist.destroy_process_group()


def exchange_cost(repeats: int) -> dict[str, float]:
    """Medians over both ranks' calls, with and without the exchange."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as root, socket.socket() as probe:
        write_small_snapshot(Path(root))
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        mp.spawn(rank_main, args=(port, root, repeats), nprocs=2, join=True)
        ranks = [json.loads(Path(root, f"rank{rank}.json").read_text()) for rank in range(2)]
    return {key: max(rank[key] for rank in ranks) for key in ("exchanged", "alone")}


def table(rows: list[Row]) -> str:
    lines = ["| model (recipe) | parameters | tensors (frozen) | verify | snapshot read | model read | peak heap |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(
            f"| {row.name} | {row.parameters / 1e9:,.1f} B | {row.tensors:,} ({row.frozen:,}) | {row.verify * 1e3:.1f} ms "
            f"| {row.snapshot_read * 1e3:.1f} ms | {row.model_read * 1e3:.1f} ms | {row.peak_heap / 2**20:.1f} MiB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest model, one call: checks the script runs")
    args = parser.parse_args()
    os.chdir(REPO)  # the committed snapshots are found the way `mmfreeze snapshot` run here finds them
    cases, repeats = (CASES[:1], 1) if args.smoke else (CASES, REPEATS)
    rows = [measure(name, path, repeats, first=index == 0) for index, (name, path) in enumerate(cases)]
    print(f"verify_frozen_set on meta, single process, median of {repeats} call(s) after a warm-up call")
    print(table(rows))
    print(f"first call of the process (imports the guard), {rows[0].name}: {rows[0].first_call * 1e3:.1f} ms")
    cost = exchange_cost(repeats)
    print(f"2 gloo ranks, small model, median (slower rank): {cost['exchanged'] * 1e3:.2f} ms with the rank "
          f"exchange, {cost['alone'] * 1e3:.2f} ms alone")


if __name__ == "__main__":
    main()
