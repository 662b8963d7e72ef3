"""The memory model runs only where it is shown: a snapshot check never loads it (issue 49: the
corpus check must not slow down)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.test_explain import TINY_LLAVA

PROBE = """
import sys
from mmfreeze.cli.main import cli
try:
    cli(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print("MEMORY LOADED:", sorted(m for m in sys.modules if m.startswith("mmfreeze.memory")))
raise SystemExit(code)
"""


def test_snapshot_update_and_check_never_import_the_memory_model(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\nworld_size = 8\n")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    (tmp_path / "recipe.yaml").write_text(
        "model:\n  _target_: nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained\n"
        "  pretrained_model_name_or_path: ckpt\n  torch_dtype: torch.bfloat16\n"
        "freeze_config:\n  freeze_modules: [{path: model.vision_tower}]\n"
        "optimizer: {_target_: torch.optim.AdamW, lr: 1.0e-5}\n")
    # the test run's cache: the update computes the snapshot (on the run's build of this config, made
    # once per run), the check reads it back; both start where a user's command starts
    for command in (["snapshot", "--update", "recipe.yaml"], ["snapshot", "--check", "recipe.yaml"]):
        done = subprocess.run([sys.executable, "-c", PROBE, *command], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "MEMORY LOADED: []" in done.stdout, done.stdout
