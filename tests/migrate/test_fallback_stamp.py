"""Honest stamps (issue 48 item 2): a recipe whose model the framework could not build on meta, and
the transformers class stood in for (`builder_fallback = "transformers"`), is compiled for the builder
the proof really used, and the migrate report says it was not proven on the class that trains.

The fallback itself (the framework's class failing on meta) cannot be caused with the classes this
environment installs: the structure the run is handed is the transformers build with the note a
fallback leaves (`tests/models/test_framework.py` causes the fallback with a class that raises)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from ruamel.yaml import YAML

from mmfreeze.migrate.run import MigrateOptions, plan_files
from mmfreeze.migrate.yaml_file import NOT_PROVEN_ON_THE_TRAINED_CLASS
from mmfreeze.models.framework import BuilderChoice
from mmfreeze.workspace import Workspace
from tests.conftest import EXAMPLE_CONFIGS

RECIPE = EXAMPLE_CONFIGS / "vlm_finetune" / "qwen2_5_vl" / "qwen2_5_vl_7b_cord_v2.yaml"


class FallenBack(Workspace):
    """The run's workspace, handing out each structure with the note a fallback leaves."""

    def structure(self, request):
        return replace(super().structure(request), build_note="Qwen2VLForConditionalGeneration: needs the fla extra")


def test_a_section_proven_on_a_fallback_class_is_stamped_so_and_flagged(tmp_path: Path, workspace_of) -> None:
    path = tmp_path / "a.yaml"
    shutil.copy(RECIPE, path)
    text = path.read_text()
    assert text.count("    - {path: model.visual}\n") == 1
    path.write_text(text.replace("    - {path: model.visual}\n", "    - {path: model.visual.blocks}\n"))  # to recompile

    builder = BuilderChoice(kind="framework", framework_version="0.7.0", fallback="transformers", reason="test")
    base = workspace_of(tmp_path, framework="0.7", builder=builder)
    workspace = FallenBack(settings=base.settings, builder=builder, structures=base.structures, documents=base.documents)
    [result] = plan_files([path], MigrateOptions(), workspace)
    assert result.status == "recompiled", result.error
    written = YAML(typ="safe").load(result.new_text)["mmfreeze"]["compiled_for"]
    assert written.endswith("builder transformers (fallback from nemo-automodel 0.7.0)"), written
    assert NOT_PROVEN_ON_THE_TRAINED_CLASS in result.notes
