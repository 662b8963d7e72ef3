"""A warm corpus check with one recipe that cannot be built, against the same check without it.

    python benchmarks/warm_with_failure.py       # median of 3 warm runs each (target: at most 1.2x)

A model transformers cannot build fails the same way every time, so its failure is cached under
the recipe's frozen-set key like a success. Without that, every warm check rebuilds it (imports
torch and transformers, seconds). The recipe here is not excluded: it is reported as an input
error on every run, as a user would see it.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus_check import CORPUS, REPEATS, environment_snapshots, median, mmfreeze  # noqa: E402

UNBUILDABLE = {
    "model_type": "llava",
    "text_config": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 5, "num_hidden_layers": 2},
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "num_attention_heads": 4},
}
"""64 is not a multiple of 5 attention heads: transformers rejects the config."""
RECIPE = """\
model:
  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained
  pretrained_model_name_or_path: ../../unbuildable
freeze_config: {vision: {tower: true}}
"""


def warm_seconds(work: Path, cache: Path) -> tuple[float, list[float], int]:
    mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache)  # cold: fills the cache
    runs = [mmfreeze("snapshot", "--check", "-q", "example_configs", cwd=work, cache=cache) for _ in range(REPEATS)]
    warm = median(runs, key=lambda run: run.seconds)
    return warm.seconds, [run.seconds for run in runs], warm.exit_code


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mmfreeze-fail-") as scratch_name:
        scratch = Path(scratch_name)
        work = scratch / "repo"
        shutil.copytree(CORPUS, work / "example_configs")
        shutil.copytree(environment_snapshots(), work / "snapshots")
        without, without_runs, without_exit = warm_seconds(work, scratch / "cache-without")
        (work / "unbuildable").mkdir()
        (work / "unbuildable" / "config.json").write_text(json.dumps(UNBUILDABLE))
        (work / "example_configs" / "extra").mkdir()
        (work / "example_configs" / "extra" / "unbuildable.yaml").write_text(RECIPE)
        with_failure, with_runs, with_exit = warm_seconds(work, scratch / "cache-with")
    print(f"warm check without the unbuildable recipe: {without:.2f}s (runs {', '.join(f'{s:.2f}' for s in without_runs)}; exit {without_exit})")
    print(f"warm check with it: {with_failure:.2f}s (runs {', '.join(f'{s:.2f}' for s in with_runs)}; exit {with_exit}, 3 = input error)")
    print(f"ratio: {with_failure / without:.2f}x (target: at most 1.2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
