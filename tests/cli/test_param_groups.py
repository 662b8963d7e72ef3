"""Issue 26: optimizer groups in snapshots; the cases nemo-automodel 0.7.0 leaves silent are input errors.

A tiny LLaVA (vision tower frozen) in a repository of its own; each recipe sets one
`optimizer.param_group_overrides` list, with the framework's regex patterns or mmfreeze's
selectors (the good recipe has both). `mmfreeze snapshot` reports the recipe, the entry's key,
what exists, and whether the framework warns or says nothing; every other recipe is still checked.
A recipe whose rates change is reported as changed, by old and new rate and module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.cli.test_explain import TINY_LLAVA
from tests.cli.test_snapshot import run

RECIPE = """\
model:
  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained
  pretrained_model_name_or_path: ../ckpt
freeze_config:
  vision: {{tower: true, projector: false}}
  language_model: false
optimizer:
  _target_: {target}
  lr: 1.0e-5
  param_group_overrides: {overrides}
{scheduler}"""
SCHEDULER = "lr_scheduler: {lr_decay_style: cosine}\n"
CASES = {
    "no_match": ("torch.optim.AdamW", [{"pattern": "visual", "lr_mult": 0.1}],
                 ["optimizer.param_group_overrides[0].pattern: pattern 'visual' matches no parameter of this model",
                  "nemo-automodel 0.7.0 only logs a warning and trains on without the group"]),
    "frozen_only": ("torch.optim.AdamW", [{"pattern": "vision_tower", "lr_mult": 0.1}],
                    ["optimizer.param_group_overrides[0].pattern: pattern 'vision_tower' matches only frozen parameters",
                     "(", "e.g. model.vision_tower.", "nemo-automodel 0.7.0 accepts it silently"]),
    "shadowed": ("torch.optim.AdamW", [{"pattern": "layers", "lr_mult": 0.5}, {"pattern": r"language_model\.layers\.1",
                                                                                  "lr_mult": 0.1}],
                 ["optimizer.param_group_overrides[1].pattern: pattern 'language_model\\\\.layers\\\\.1' is fully "
                  "shadowed: every trainable parameter it matches is taken by an earlier entry ([0]",
                  "move it before them or remove it"]),
    "dion": ("dion.Muon", [{"pattern": "multi_modal_projector", "lr_mult": 10.0}],
             ["optimizer.param_group_overrides[0]: dion.Muon does its own parameter grouping and ignores "
              "param_group_overrides (nemo-automodel 0.7.0 only logs a warning"]),
    "bad_regex": ("torch.optim.AdamW", [{"pattern": "visual(", "lr_mult": 0.1}],
                  ["optimizer.param_group_overrides[0].pattern: 'visual(' is not a Python regex"]),
    "unknown_key": ("torch.optim.AdamW", [{"pattern": "visual", "lr_mul": 0.1}],
                    ["optimizer.param_group_overrides[0].lr_mul: unknown key 'lr_mul' (did you mean 'lr_mult'?)",
                     "ParamGroupOverride takes pattern, lr_mult, wd_mult"]),
    "no_scheduler": ("torch.optim.AdamW", [{"pattern": "multi_modal_projector", "lr_mult": 10.0}],
                     ["optimizer.param_group_overrides[0]: pattern 'multi_modal_projector' sets lr_mult 10, wd_mult 1, "
                      "and this recipe has no `lr_scheduler` section", "every group trains at the base rate "
                      "(nemo-automodel 0.7.0 accepts it silently); add one, e.g. `lr_scheduler: {lr_decay_style: "
                      "constant}`"]),
    # Selector entries (the `(modality, role)` vocabulary) are checked as `freeze_config`'s are.
    "unknown_role": ("torch.optim.AdamW", [{"role": "vision.projektor", "lr_mult": 10.0}],
                     ["optimizer.param_group_overrides[0]: role: this model has no (modality, role) group "
                      "'vision.projektor' (did you mean 'vision.projector'?); it has: vision.tower, vision.projector, "
                      "language_model"]),
    "deep_range": ("torch.optim.AdamW", [{"layers": "language_model", "last": 40, "lr_mult": 2.0}],
                   ["optimizer.param_group_overrides[0]: last: 40 exceeds the depth of language_model "
                    "(model.language_model.layers, 2 layers)"]),
    "no_module": ("torch.optim.AdamW", [{"glob": "model.visual.*", "lr_mult": 0.1}],
                  ["optimizer.param_group_overrides[0]: `glob: model.visual.*` matches no module of this model"]),
    "frozen_role": ("torch.optim.AdamW", [{"role": "vision.tower", "lr_mult": 0.1}],
                    ["optimizer.param_group_overrides[0]: `role: vision.tower` matches only frozen parameters"]),
    "two_selectors": ("torch.optim.AdamW", [{"role": "vision.projector", "pattern": "x", "lr_mult": 0.1}],
                      ["optimizer.param_group_overrides[0]: an entry is {pattern: <regex>} or a selector",
                       "(it has pattern, role)"]),
}


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    (tmp_path / "recipes").mkdir()
    for name, (target, overrides, _) in CASES.items():
        scheduler = "" if name == "no_scheduler" else SCHEDULER
        (tmp_path / "recipes" / f"{name}.yaml").write_text(
            RECIPE.format(target=target, overrides=json.dumps(overrides), scheduler=scheduler))
    good = [{"role": "vision.projector", "lr_mult": 10.0}, {"pattern": "lm_head", "wd_mult": 0.0}]
    (tmp_path / "recipes" / "good.yaml").write_text(
        RECIPE.format(target="torch.optim.AdamW", overrides=json.dumps(good), scheduler=SCHEDULER))
    return tmp_path


def test_each_silent_case_is_an_input_error_naming_the_recipe_and_the_entry(repository: Path) -> None:
    result = run(repository, "recipes", "--update")
    assert result.returncode == ExitCode.INPUT_ERROR, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for name, (_, _, expected) in CASES.items():
        line = next(line for line in result.stdout.splitlines() if line.startswith(f"recipes/{name}.yaml: input error"))
        message = result.stdout.split(line, 1)[1].split("\nrecipes/", 1)[0]
        for part in expected:
            assert part in message, (name, part, message)
    assert "recipes/good.yaml: new snapshot written" in result.stdout
    assert not (repository / "snapshots" / "recipes" / "no_match.yaml.frozen.txt").exists()


def test_a_changed_rate_is_reported_by_old_and_new_rate_and_module(repository: Path) -> None:
    for name in CASES:
        (repository / "recipes" / f"{name}.yaml").unlink()
    assert run(repository, "recipes", "--update").returncode == ExitCode.OK
    stored = (repository / "snapshots" / "recipes" / "good.yaml.frozen.txt").read_text()
    assert "--- rate: lr_mult 0, wd_mult 0\n" not in stored
    assert "--- rate: lr_mult 1, wd_mult 0\nlm_head.weight\n" in stored
    assert "--- rate: lr_mult 10, wd_mult 1\nmodel.multi_modal_projector.linear_1.bias\n" in stored
    recipe = repository / "recipes" / "good.yaml"
    recipe.write_text(recipe.read_text().replace('"lr_mult": 10.0', '"lr_mult": 5.0'))
    result = run(repository, "recipes", "--check")
    assert result.returncode == ExitCode.CHANGED, result.stdout + result.stderr
    assert "  rate lr_mult 10, wd_mult 1 -> lr_mult 5, wd_mult 1: 4 tensors" in result.stdout
    assert "    model.multi_modal_projector (vision projector): 4 tensors" in result.stdout
    assert "newly" not in result.stdout


def test_explain_lists_each_rate_by_resolved_module(repository: Path) -> None:
    from click.testing import CliRunner

    from mmfreeze.cli.main import cli

    result = CliRunner().invoke(cli, ["explain", str(repository / "recipes" / "good.yaml"), "--format", "json"])
    assert result.exit_code == 0, result.output
    rates = json.loads(result.stdout)["rates"]
    assert [(rate["lr_mult"], rate["wd_mult"], [(m["module"], m["tensors"]) for m in rate["modules"]])
            for rate in rates] == [
        (1.0, 0.0, [("language model: lm_head", 1)]),
        (10.0, 1.0, [("model.multi_modal_projector (vision projector)", 4)]),
    ]
