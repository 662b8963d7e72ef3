"""One rank of a 2-stage pipeline of the framework's own tiny Llama, guarded stage by stage (issue 41).

    python pipeline_worker.py RANK 2 STORE_FILE OUT_DIR PG_TIMEOUT_S WORK_DIR RECIPE [--unfreeze PARAMETER]

The framework's ``NeMoAutoModelForCausalLM`` builds the model, its ``apply_parameter_freezing``
applies the recipe's ``freeze_config``, its ``split_model_into_stages`` cuts it into one stage per
rank (1F1B, names kept), and its ``build_pipeline_schedule`` runs one step through torch's pipelining
on gloo. The device is the CPU, passed where the framework's recipe passes ``cuda`` (its
``from_config`` hard-codes ``torch.device("cuda", ...)`` for the pipeline, which is why the recipe
class itself cannot run a pipeline on a CPU). The guard is armed as `mmfreeze train` arms it for a
recipe with ``pp_size`` above 1 (``stage=True``): each stage is checked against the snapshot names it
holds, before the first step, and the verdicts are shared by every rank of the job.
``OUT_DIR/rank<R>.json`` records the stage's names, the guard's line or error.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import yaml  # noqa: E402

from tests.distributed.launch import join_process_group  # noqa: E402
from tests.nemo.train_worker import cpu_substitutions  # noqa: E402

BATCH, SEQ_LEN, VOCAB = 2, 8, 128


def build_model(recipe: Path) -> torch.nn.Module:
    """The framework's own class, built and frozen as the recipe says (before the process group
    exists: the framework builds on meta inside one, for its sharding to materialise)."""
    from nemo_automodel import NeMoAutoModelForCausalLM
    from nemo_automodel.components.utils.model_utils import apply_parameter_freezing, parse_freeze_config
    from transformers import AutoConfig

    document = yaml.safe_load(recipe.read_text())
    config = AutoConfig.from_pretrained(document["model"]["config"]["pretrained_model_name_or_path"])
    torch.manual_seed(0)
    with cpu_substitutions([]):
        model = NeMoAutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16)
    apply_parameter_freezing(model, parse_freeze_config(document["freeze_config"]), strict=True)
    return model


def split(model: torch.nn.Module) -> tuple[torch.nn.Module, object]:
    """This rank's stage of ``model`` and the 1F1B schedule that runs it, by the framework's functions."""
    from nemo_automodel.components.distributed.pipelining.functional import (
        build_pipeline_schedule,
        split_model_into_stages,
    )
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("pp",))
    stages, parts = split_model_into_stages(model, mesh["pp"], "pp", "1F1B", torch.device("cpu"))
    loss = torch.nn.CrossEntropyLoss()
    schedule = build_pipeline_schedule(None, "1F1B", microbatch_size=1, local_batch_size=BATCH, stages=stages,
                                       loss_fn=lambda logits, target: loss(logits.float().flatten(0, 1), target.flatten()))
    return parts[0], schedule


def main() -> int:
    rank, world, store_file, out_dir, timeout, work_dir, recipe, *options = sys.argv[1:]
    unfreeze = options[1] if options[:1] == ["--unfreeze"] else None
    os.chdir(work_dir)
    model = build_model(Path(recipe))
    rank, _ = join_process_group(rank, world, store_file, timeout)
    from mmfreeze.guard.step_zero import StepZeroGuard, arm_step_zero

    said: list[str] = []
    result: dict = {"rank": rank}
    try:
        stage, schedule = split(model)
        result["names"] = [name for name, _ in stage.named_parameters()]
        optimizer = torch.optim.AdamW([p for p in stage.parameters() if p.requires_grad], lr=1e-3)
        if unfreeze is not None and unfreeze in dict(stage.named_parameters()):
            dict(stage.named_parameters())[unfreeze].requires_grad_(True)
        arm_step_zero(StepZeroGuard(recipe=Path(recipe), stage=True, say=said.append))
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(3, VOCAB, (BATCH, SEQ_LEN + 1), generator=generator)
        if rank == 0:
            schedule.step(ids[:, :-1])
        else:
            schedule.step(target=ids[:, 1:])
        optimizer.step()
        result["stepped"] = True
    except Exception as error:  # the test asserts on it
        result["error"] = f"{type(error).__name__}: {error}"
        result["traceback"] = traceback.format_exc()
    result["said"] = said
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result, indent=1))
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
