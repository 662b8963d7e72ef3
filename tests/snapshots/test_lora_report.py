"""A LoRA ``exclude_modules`` change end to end: `mmfreeze snapshot` on a tiny Llava recipe with
`peft:`, accepted, then one more exclude entry. The frozen names do not move (the PEFT baseline
freezes every base weight either way); the report must say whose adapters went away."""

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
peft:
  exclude_modules: {exclude}
"""
VISION_ADAPTER_LINES = [
    f"model.vision_tower.encoder.layers.{{0..1}}.{module}.lora_{matrix}.weight"
    for module in ("mlp.fc1", "mlp.fc2", "self_attn.k_proj", "self_attn.out_proj", "self_attn.q_proj", "self_attn.v_proj")
    for matrix in "AB"
]
"""The tiny vision tower's adapters: 6 Linear modules in each of 2 layers, lora_A and lora_B each."""


def write_lora_recipe(root: Path, *exclude: str) -> None:
    (root / "recipes" / "lora.yaml").write_text(RECIPE.format(exclude=json.dumps(list(exclude))))


@pytest.fixture
def lora_corpus(tmp_path: Path) -> Path:
    """recipes/lora.yaml adapting every Linear but lm_head, with its snapshot accepted."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    (tmp_path / "recipes").mkdir()
    write_lora_recipe(tmp_path, "*lm_head*")
    result = run(tmp_path, "recipes", "--update")
    assert result.returncode == ExitCode.OK, result.stdout + result.stderr
    return tmp_path


def test_excluding_the_vision_tower_reports_its_24_removed_adapters_by_module_in_text_and_markdown(
    lora_corpus: Path,
) -> None:
    write_lora_recipe(lora_corpus, "*lm_head*", "*vision_tower*")
    text = run(lora_corpus, "recipes", "--check")
    assert text.returncode == ExitCode.CHANGED, text.stdout + text.stderr
    assert text.stdout.splitlines() == [  # no newly frozen or newly trainable section: no frozen name moved
        "recipes/lora.yaml: changed (snapshots/recipes/lora.yaml.frozen.txt)",
        "  nemo-automodel 0.7: native",
        "  trainable_parameters: 26368 -> 19200",  # the 7,168 parameters of the removed adapters
        "  trainable_tensors: 56 -> 32",
        "  adapters removed: 24 tensors / 0 parameters",
        "    model.vision_tower (vision tower): 24 tensors / 0 parameters",
        *(f"      {line}" for line in VISION_ADAPTER_LINES),
        "nemo-automodel 0.7: 1 runs natively",
    ]
    markdown = run(lora_corpus, "recipes", "--check", "--report", "markdown").stdout
    assert ("| `recipes/lora.yaml` | changed | no frozen name moved | adapters removed: 24 tensors<br>"
            "header: trainable_parameters 26368 → 19200; trainable_tensors 56 → 32 |") in markdown
    assert "**LoRA adapters removed**\n\n| module | tensors | parameters |\n|---|---:|---:|\n" \
           "| `model.vision_tower (vision tower)` | 24 | 0 |\n" in markdown
    assert "\n".join(VISION_ADAPTER_LINES) in markdown
