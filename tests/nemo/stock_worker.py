"""One process with nemo-automodel and no mmfreeze: the framework's own trainability code on recipes as written.

    python tests/nemo/stock_worker.py JOBS.json OUT.json

Each job names a model saved with ``torch.save`` (built on meta by the test that writes the jobs)
and a recipe file. The worker reads the recipe's `peft` and `freeze_config` as the framework's
recipe hands them over (plain YAML data), runs the framework's LoRA injection,
``parse_freeze_config`` and ``_apply_trainability_policy`` (strict, on the whole model; a
composite's parts as ``framework_pipeline.through_composite`` does it), and writes every name
left trainable; for a recipe with `param_group_overrides`, it builds the framework's typed
optimizer config of the recipe's `optimizer` section on that model and writes every tensor's
``(lr_mult, wd_mult)`` that is not the base rate. It fails if anything imported mmfreeze, before
the first job or after the last.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def trained(model: Any, document: dict[str, Any], drafter: dict[str, Any] | None) -> Any:
    import torch  # noqa: F401  (the framework's modules expect it imported)
    from nemo_automodel._transformers import infrastructure
    from nemo_automodel.components._peft.lora import PeftConfig, apply_lora_to_linear_modules
    from nemo_automodel.components.utils import model_utils

    peft = document.get("peft")

    def load(part: Any, forwarded: bool) -> None:
        peft_config = None
        if peft is not None and forwarded:
            peft_config = PeftConfig(**{key: value for key, value in peft.items() if key != "_target_"})
            apply_lora_to_linear_modules(part, peft_config, skip_freeze=True)
        parsed = model_utils.parse_freeze_config(document.get("freeze_config") if forwarded else None)
        infrastructure._apply_trainability_policy(part, peft_enabled=peft_config is not None, freeze_config=parsed,
                                                  strict=True)

    if drafter is None:
        load(model, True)
        return model
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    load(model.base, True)
    load(model.drafter, False)
    return type(model)(model.base, model.drafter, **drafter)


def rates(model: Any, recipe: Path, document: dict[str, Any], folder: Path) -> dict[str, list[float]] | None:
    """Tensor name -> ``[lr_mult, wd_mult]`` off the base rate, as the framework's optimizer groups them."""
    import yaml
    from nemo_automodel.components.config.loader import load_yaml_config
    from nemo_automodel.recipes._typed_config import RecipeConfig

    if not (document.get("optimizer") or {}).get("param_group_overrides"):
        return None
    section = folder / f"{recipe.stem}.optimizer.yaml"  # alone: its loader imports every `_target_` of a file
    section.write_text(yaml.safe_dump({"optimizer": document["optimizer"]}))
    [optimizer] = RecipeConfig(load_yaml_config(str(section))).optimizer.build(model)
    name_of = {id(parameter): name for name, parameter in model.named_parameters()}
    found = {}
    for group in optimizer.param_groups:
        rate = [float(group.get("lr_mult", 1.0)), float(group.get("wd_mult", 1.0))]
        if rate != [1.0, 1.0]:
            found.update({name_of[id(parameter)]: rate for parameter in group["params"]})
    return found


def main(jobs_path: str, out_path: str) -> None:
    import dill
    import torch
    import yaml

    assert "mmfreeze" not in sys.modules, "mmfreeze was imported before the first job"
    results, rated = {}, {}
    for job in json.loads(Path(jobs_path).read_text()):
        model = torch.load(job["model"], weights_only=False, pickle_module=dill)
        document = yaml.safe_load(Path(job["recipe"]).read_text())
        model = trained(model, document, job.get("drafter"))
        results[job["recipe"]] = sorted(
            name for name, parameter in model.named_parameters(remove_duplicate=False) if parameter.requires_grad)
        if (found := rates(model, Path(job["recipe"]), document, Path(out_path).parent)) is not None:
            rated[job["recipe"]] = found
    loaded = sorted(name for name in sys.modules if name == "mmfreeze" or name.startswith("mmfreeze."))
    assert not loaded, f"mmfreeze modules were imported: {loaded[:5]}"
    Path(out_path).write_text(json.dumps({"trainable": results, "rates": rated, "mmfreeze_modules": loaded}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
