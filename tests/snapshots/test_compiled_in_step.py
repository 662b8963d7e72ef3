"""A hand edit of a migrated recipe's compiled section is caught in both README environments
(issue 47): where the compiled section was made (`.ci/framework_env`: nemo-automodel 0.7.0, its
transformers, its own classes) and where it was not (the test environment: transformers 5.25.0 and
its classes). The compiled selectors are applied as 0.7 applies them, on the class this environment
builds, and must train what the source does. The report names which way the compiled side moved
and the one command that fixes it.

`tests/snapshots/` holds no framework test otherwise: the mark makes `.ci/framework_env` run it too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from tests.cli.test_snapshot_faults import SETTINGS, run, said
from mmfreeze.versions import installed_version
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT, SNAPSHOT_TRANSFORMERS_VERSION

pytestmark = pytest.mark.framework

RECIPE = EXAMPLE_CONFIGS / "vlm_finetune" / "qwen2_5_vl" / "qwen2_5_vl_7b_cord_v2.yaml"
COMPILED = "    - {path: model.visual}\n"
"""The compiled selector in the file: the whole vision tower, merger included, frozen."""
HAND_EDITED = "    - {path: model.visual.blocks}\n"
"""The edit a new user tried: the merger and the patch embedding would train on the stock framework."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(SETTINGS)
    text = RECIPE.read_text()
    assert text.count(COMPILED) == 1, "the bundled recipe's compiled section moved: update this test"
    (root / "recipes" / "a.yaml").write_text(text)
    update = run(root, "--update", "recipes")
    assert update.returncode == ExitCode.OK, said(update)
    return root


def test_a_hand_edited_compiled_section_is_caught_here_naming_the_side_and_the_fix(repo: Path) -> None:
    assert run(repo, "--check", "recipes").returncode == ExitCode.OK
    recipe = repo / "recipes" / "a.yaml"
    recipe.write_text(recipe.read_text().replace(COMPILED, HAND_EDITED))

    result = run(repo, "--check", "--report", "json", "recipes")
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    [outcome] = json.loads(result.stdout)["recipes"]
    assert outcome["status"] == "input_error"
    message = outcome["message"]
    assert message.startswith("recipes/a.yaml: freeze_config: out of step with its source under `mmfreeze:`"), message
    assert "the compiled `freeze_config` trains 6 tensors the source freezes (first model.visual.merger." in message
    assert "run `mmfreeze migrate` to compile it again from the source (`mmfreeze migrate recipes/a.yaml`;" in message


def test_the_source_edited_without_migrating_is_caught_here(repo: Path) -> None:
    recipe = repo / "recipes" / "a.yaml"
    text = recipe.read_text()
    source = "    vision: {tower: true, projector: true}\n"
    assert text.count(source) == 1, "the bundled recipe's source moved: update this test"
    recipe.write_text(text.replace(source, "    vision: {tower: true, projector: false}\n"))

    result = run(repo, "--check", "--report", "json", "recipes")
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    message = json.loads(result.stdout)["recipes"][0]["message"]
    assert "the compiled `freeze_config` freezes 5 tensors the source trains (first model.visual.merger." in message
    assert "(`mmfreeze migrate recipes/a.yaml`;" in message


OMNI = EXAMPLE_CONFIGS / "audio_finetune" / "qwen2_5_omni" / "qwen2_5_omni_7b_av_mix.yaml"
OMNI_COMPILED = "    - {path: thinker.audio_tower}\n"
"""Compiled on transformers 5.18.0's tree; 5.24 and later nest it as ``thinker.model.audio_tower``."""
OMNI_HAND_EDITED = "    - {path: thinker.audio_tower.layers}\n"
"""The audio tower's convolutions, positional and output layers would train on the stock framework."""


@pytest.mark.slow  # builds Qwen2.5-Omni-7B on meta
def test_a_hand_edit_compiled_on_another_transformers_tree_is_caught_through_its_renames(tmp_path: Path) -> None:
    """Where this environment's transformers renamed the tree the section was compiled on (the test
    environment), its selectors are moved through the installed conversion mapping, as `migrate`
    moves them, and the edit is caught all the same: no recipe's comparison is skipped for it."""
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(SETTINGS)
    text = OMNI.read_text()
    assert text.count(OMNI_COMPILED) == 1, "the bundled recipe's compiled section moved: update this test"
    (root / "recipes" / "a.yaml").write_text(text)
    assert run(root, "--update", "recipes").returncode == ExitCode.OK
    (root / "recipes" / "a.yaml").write_text(text.replace(OMNI_COMPILED, OMNI_HAND_EDITED))

    result = run(root, "--check", "--report", "json", "recipes")
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    message = json.loads(result.stdout)["recipes"][0]["message"]
    assert message.startswith("recipes/a.yaml: freeze_config: out of step with its source under `mmfreeze:`"), message
    assert "the compiled `freeze_config` trains " in message and " tensors the source freezes (first thinker." in message


MINIMAX = Path("example_configs/vlm_finetune/minimax_m3/minimax_m3_vl_medpix_ep32.yaml")
MINIMAX_SNAPSHOT = Path("snapshots") / f"{MINIMAX}.frozen.txt"
MINIMAX_COMPILED = "    - {path: vision_tower.vision_model}\n"
"""Compiled on the framework's own class: its ``vision_tower.vision_model`` is transformers 5.25's
``model.vision_tower``, and its patch embedding is 5.25's ``embeddings.proj`` (no prefix rename)."""
MINIMAX_HAND_EDITED = "    - {path: vision_tower.vision_model.encoder}\n"
"""The patch embedding and the pre-layer norm would train on the stock framework."""
MADE_HERE = installed_version("transformers") == SNAPSHOT_TRANSFORMERS_VERSION
"""`.ci/framework_env`: the framework's own classes are built here."""


def minimax_repository(tmp_path: Path, *, with_snapshot: bool) -> Path:
    """A repository that commits the bundled MiniMax-M3 recipe, and (``with_snapshot``) its
    snapshot made where its section was compiled (the framework's own class)."""
    root = tmp_path / "repo"
    for copy in (MINIMAX, MINIMAX_SNAPSHOT)[: 2 if with_snapshot else 1]:
        (root / copy).parent.mkdir(parents=True, exist_ok=True)
        (root / copy).write_text((REPO_ROOT / copy).read_text())
    (root / "pyproject.toml").write_text(SETTINGS)
    text = (root / MINIMAX).read_text()
    assert text.count(MINIMAX_COMPILED) == 1, "the bundled recipe's compiled section moved: update this test"
    return root


@pytest.mark.slow  # builds MiniMax-M3 on meta
@pytest.mark.parametrize("with_snapshot", [True, False], ids=["its snapshot committed", "no snapshot committed"])
def test_a_hand_edit_compiled_on_the_frameworks_own_class_is_caught_through_its_checkpoint_renames(
    tmp_path: Path, with_snapshot: bool,
) -> None:
    """The section names the tree of the framework's own class, which the test environment does not
    build: it is applied to this environment's class under that class's names, through the
    checkpoint renames of that class, so the comparison is never skipped. They come from the
    snapshot made there where the repository commits it, else from mmfreeze's record of the
    framework's classes (``framework_renames.json``): `--update` in a repository with no snapshot
    of it refuses the edit instead of writing a snapshot. Where the framework's class is built
    (`.ci/framework_env`), the section is applied as it stands."""
    root = minimax_repository(tmp_path, with_snapshot=with_snapshot)
    recipe = root / MINIMAX
    if with_snapshot:
        assert run(root, "--check", "example_configs").returncode == (ExitCode.OK if MADE_HERE else ExitCode.BUILDER_SWITCH)
    recipe.write_text(recipe.read_text().replace(MINIMAX_COMPILED, MINIMAX_HAND_EDITED))

    result = run(root, "--check" if with_snapshot else "--update", "--report", "json", "example_configs")
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    message = json.loads(result.stdout)["recipes"][0]["message"]
    assert message.startswith(f"{MINIMAX}: freeze_config: out of step with its source under `mmfreeze:`"), message
    assert "the compiled `freeze_config` trains 3 tensors the source freezes (first " in message
    assert f"(`mmfreeze migrate {MINIMAX}`;" in message
    assert (root / MINIMAX_SNAPSHOT).is_file() == with_snapshot


@pytest.mark.slow  # builds MiniMax-M3 on meta
def test_a_section_compiled_where_nothing_here_records_the_names_is_an_error_never_a_pass(tmp_path: Path) -> None:
    """Compiled for the framework's class under a transformers release that neither a snapshot nor
    mmfreeze's record names (5.17.0): the test environment cannot apply the section to any tree it
    can name, so the check says so, and where it can be held to its source, instead of passing it
    unchecked. Where the framework's own class is built (`.ci/framework_env`) its selectors apply as
    they stand, and the recipe passes."""
    root = minimax_repository(tmp_path, with_snapshot=False)
    recipe = root / MINIMAX
    compiled_for = "compiled_for: nemo-automodel 0.7, transformers 5.18.0, builder nemo-automodel 0.7.0\n"
    text = recipe.read_text()
    assert text.count(compiled_for) == 1, "the bundled recipe's compiled_for moved: update this test"
    recipe.write_text(text.replace(compiled_for, compiled_for.replace("5.18.0", "5.17.0")))

    result = run(root, "--update", "--report", "json", "example_configs")
    if MADE_HERE:
        assert result.returncode == ExitCode.OK, said(result)
        return
    assert result.returncode == ExitCode.INPUT_ERROR, said(result)
    message = json.loads(result.stdout)["recipes"][0]["message"]
    assert message.startswith(f"{MINIMAX}: mmfreeze.compiled_for: cannot be held to its source here: it was compiled "
                              "on the model tree of nemo-automodel 0.7, transformers 5.17.0, builder nemo-automodel "
                              "0.7.0"), message
    assert f"run `mmfreeze snapshot --update {MINIMAX}` there and commit that snapshot" in message
    assert not (root / MINIMAX_SNAPSHOT).exists()
