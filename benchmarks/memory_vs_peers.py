"""mmfreeze's per-rank memory against accelerate's estimate, both against the same real runs (issue 49).

    .venv-framework/bin/python benchmarks/memory_vs_peers.py

Runs the configurations of ``tests/nemo/test_memory_exact.py`` (its ``CASES``, launched the same
way: the stock entry point ``nemo_automodel.cli.app`` in torchrun workers on gloo ranks on the CPU, measured by
``memory_runs/memory_probe.py`` through torch's optimizer step hooks before the second step, and
predicted by ``mmfreeze explain --format json --world-size N``), then prints for every rank the
measured bytes of parameters + gradients + optimizer states and, as ratios to it:

* **mmfreeze**: the sum of the three figures ``explain`` predicts for that rank;
* **accelerate**: the "Training using Adam" figure ``accelerate estimate-memory`` prints, computed by
  accelerate's own code (``accelerate.utils.calculate_maximum_sizes`` on the model built on meta in
  fp32, as ``create_empty_model`` builds it, then ``accelerate.commands.estimate.estimate_training_usage``
  for the recipe's dtype, whose largest stage is the printed figure). Its documented reading
  (https://huggingface.co/docs/accelerate/usage_guides/model_size_estimator, the "Model memory
  estimator" guide, and every report of its Hub Space): "When training with Adam, you can expect
  roughly 4x the reported results to be used (1x for the model, 1x for the gradients, and 2x for the
  optimizer)". It is one device's figure for the whole model: it counts frozen parameters as trained,
  knows no LoRA adapter and no sharding, and, of a distillation run, sizes the student alone.
* **accelerate / N**: the same divided by the world size, the most favourable reading of it for a
  sharded run (not accelerate's own output: said in the header).

Activations are out of scope for all three. Nothing is hard-coded: every figure comes from this run.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.nemo.test_memory_exact import Case, Run, run_all, tiny_config  # noqa: E402


def accelerate_estimate(case: Case) -> int | None:
    """What ``accelerate estimate-memory`` prints under "Training using Adam" for the case's model; ``None``
    where transformers has no class for its config (MuseGlimmer: the framework's own), which accelerate,
    building transformers' classes, cannot estimate, and for an optimizer other than AdamW (the estimate is Adam's)."""
    import torch
    from accelerate import init_empty_weights
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes
    from transformers import (
        AutoModelForImageTextToText, LlamaForCausalLM, Qwen2AudioForConditionalGeneration,
        VoxtralForConditionalGeneration,
    )

    if case.optimizer["_target_"] != "torch.optim.AdamW":
        return None
    config = tiny_config(case.family, tied=case.tied)
    # no image-text Auto class builds these (the language model alone, and the audio classes)
    classes = {"qwen2_audio": Qwen2AudioForConditionalGeneration, "voxtral": VoxtralForConditionalGeneration,
               "llama": LlamaForCausalLM}
    with init_empty_weights():  # create_empty_model's way: fp32, on meta
        if case.family in classes:
            model = classes[case.family]._from_config(config, dtype=torch.float32)
        else:
            try:
                model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
            except ValueError:  # "Unrecognized configuration class"
                return None
    total, _ = calculate_maximum_sizes(model)
    return max(estimate_training_usage(total, case.dtype).values())


def rows(run: Run, accelerate: int | None) -> list[tuple[str, int, int, int, int | None]]:
    out = []
    for rank, record in sorted(run.ranks.items()):
        measured = sum(record["bytes"].values())
        predicted = run.predicted["ranks"][rank]
        out.append((run.case.name, rank, measured,
                    predicted["parameters"] + predicted["gradients"] + predicted["optimizer"], accelerate))
    return out


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memory_vs_peers_") as folder:
        runs = run_all(Path(folder))
    failed = [run.case.name for run in runs if run.code != 0 or run.predicted is None
              or sorted(run.ranks) != list(range(run.case.world))]
    if failed:
        print(f"runs that did not finish or were not predicted: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("per-rank bytes of parameters + gradients + optimizer states (activations out of scope), "
          f"{len(runs)} stock FSDP2 runs measured in {time.monotonic() - started:.0f} s")
    print("ratio = estimate / measured; accelerate/N is that figure divided by the world size (not accelerate's output)")
    width = max(len(run.case.name) for run in runs)
    header = (f"{'case':<{width}} {'rank':>4} {'measured B':>11} {'mmfreeze - measured B':>22} {'mmfreeze':>9} "
              f"{'accelerate':>11} {'accel./N':>9}")
    print(header)
    print("-" * len(header))
    worst = {"mmfreeze": 0.0, "accelerate": 0.0, "accelerate/N": 0.0}
    for run in runs:
        estimate = accelerate_estimate(run.case)
        for name, rank, measured, predicted, accelerate in rows(run, estimate):
            ratios = {"mmfreeze": predicted / measured}
            if accelerate is not None:
                ratios |= {"accelerate": accelerate / measured, "accelerate/N": accelerate / run.case.world / measured}
            for key, ratio in ratios.items():
                worst[key] = max(worst[key], abs(ratio - 1))
            peers = (f"{ratios['accelerate']:>11.3f} {ratios['accelerate/N']:>9.3f}" if accelerate is not None
                     else f"{'n/a':>11} {'n/a':>9}")
            print(f"{name:<{width}} {rank:>4} {measured:>11,} {predicted - measured:>22,} {ratios['mmfreeze']:>9.4f} {peers}")
    print("largest relative error: " + ", ".join(f"{key} {value:.1%}" for key, value in worst.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
