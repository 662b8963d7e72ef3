"""Finding the accepted snapshot: where `mmfreeze snapshot` keeps it, or the path given; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.exceptions import SnapshotError
from mmfreeze.freeze.apply import apply_legacy_freeze_config
from mmfreeze.guard import verify_frozen_set
from mmfreeze.guard.locate import find_snapshot, read_snapshot
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.loader import build_requested_model, find_config
from mmfreeze.recipes.recipe import load_recipe
from tests.cli.test_explain import TINY_LLAVA
from tests.cli.test_snapshot import run, write_recipe
from tests.guard.helpers import FINETUNE, REPO, committed_snapshot


def test_the_snapshot_written_by_mmfreeze_snapshot_is_the_one_found_by_default(tmp_path, monkeypatch):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(TINY_LLAVA))
    write_recipe(tmp_path / "recipes" / "vlm" / "a.yaml", language=False)
    written = run(tmp_path, "recipes/vlm/a.yaml", "--update")
    assert written.returncode == ExitCode.OK, written.stdout + written.stderr
    monkeypatch.chdir(tmp_path)
    recipe = load_recipe(Path("recipes/vlm/a.yaml"))
    request = model_request(recipe)
    model = build_requested_model(request, find_config(request))
    apply_legacy_freeze_config(model, recipe.freeze_config)  # the runtime freezing training calls

    result = verify_frozen_set(model, "recipes/vlm/a.yaml")

    assert result.snapshot == Path("snapshots/recipes/vlm/a.yaml.frozen.txt")
    assert (tmp_path / result.snapshot).is_file() and result.frozen_tensors > 0


def test_default_lookup_is_relative_to_the_repository_root_from_any_folder(monkeypatch):
    """The guard reads the file `mmfreeze snapshot` writes, which does not move with the working directory."""
    monkeypatch.chdir(REPO / "example_configs")

    expected = REPO / "snapshots" / "example_configs" / "vlm_finetune" / "a.yaml.frozen.txt"
    assert find_snapshot(Path("vlm_finetune/a.yaml"), None) == expected
    assert find_snapshot(Path("vlm_finetune/a.yaml"), "custom/x.txt") == Path("custom/x.txt")


def test_a_recipe_outside_the_working_directory_finds_its_repositorys_snapshot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    assert find_snapshot(REPO / FINETUNE, None) == REPO / "snapshots" / (FINETUNE + ".frozen.txt")


def test_missing_snapshot_names_the_recipe_the_path_and_the_command_that_makes_it(tmp_path):
    recipe = tmp_path / "recipes" / "new.yaml"

    with pytest.raises(SnapshotError) as caught:
        read_snapshot(tmp_path / "snapshots" / "recipes" / "new.yaml.frozen.txt", recipe=recipe)

    assert caught.value.source == str(recipe)
    assert f"no accepted snapshot at {tmp_path}/snapshots/recipes/new.yaml.frozen.txt" in caught.value.message
    assert f"`mmfreeze snapshot --update {recipe}`" in caught.value.message


def test_the_snapshot_of_another_recipe_is_refused(tmp_path):
    other = committed_snapshot(FINETUNE)

    with pytest.raises(SnapshotError, match=f"is the snapshot of {FINETUNE}, not of this recipe"):
        read_snapshot(other, recipe=tmp_path / "cord_v3.yaml")


def test_an_unparsable_snapshot_is_a_snapshot_error_naming_the_file(tmp_path):
    broken = tmp_path / "x.yaml.frozen.txt"
    broken.write_text("not a snapshot\n")

    with pytest.raises(SnapshotError) as caught:
        read_snapshot(broken, recipe=tmp_path / "x.yaml")

    assert caught.value.source == str(broken)


def _copy_of_committed(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of a bundled recipe's committed snapshot, beside a recipe of the same name."""
    snapshot = tmp_path / "a.yaml.frozen.txt"
    snapshot.write_text(committed_snapshot(FINETUNE).read_text())
    return snapshot, tmp_path / Path(FINETUNE).name


@pytest.mark.parametrize("damage", ["cut_mid_file", "header_without_names"])
def test_a_snapshot_whose_names_do_not_add_up_to_its_header_is_refused_before_anything_starts(tmp_path, damage):
    """The launch reads the guard's snapshot before the command starts (`check_launch` calls
    `read_snapshot`): a file cut short, or a header left without its names, is refused there."""
    snapshot, recipe = _copy_of_committed(tmp_path)
    text = snapshot.read_text()
    head, body = text.split("\n---\n", 1)
    snapshot.write_text(f"{head}\n---\n{body[: len(body) // 3]}" if damage == "cut_mid_file" else f"{head}\n---\n")
    with pytest.raises(SnapshotError, match=r"the header says \d+ frozen tensors, the names list \d+: the file is cut short"):
        read_snapshot(snapshot, recipe=Path(FINETUNE))


@pytest.mark.parametrize("rate", ["-1", "1e999"])
def test_a_snapshot_rate_a_recipe_would_refuse_is_refused(tmp_path, rate):
    """The guard compares a group's rate with the snapshot's: a rate the recipe side refuses (negative,
    not finite) is refused in the snapshot too, even where the optimizer group carries the same value."""
    snapshot, _ = _copy_of_committed(tmp_path)
    text = snapshot.read_text()
    assert text.count("\n--- unreachable: ") == 1
    snapshot.write_text(text.replace("\n--- unreachable: ", f"\n--- rate: lr_mult {rate}, wd_mult 1\nlm_head.weight"
                                                          "\n--- unreachable: "))
    expected = "must be a non-negative number" if rate == "-1" else "must be a finite number"
    with pytest.raises(SnapshotError, match=expected):
        read_snapshot(snapshot, recipe=Path(FINETUNE))


def test_a_snapshot_saved_with_crlf_line_endings_is_read_as_the_check_reads_it(tmp_path):
    """The guard reads a snapshot as `snapshot --check` does (text mode's universal newlines)."""
    snapshot, _ = _copy_of_committed(tmp_path)
    snapshot.write_bytes(snapshot.read_bytes().replace(b"\n", b"\r\n"))
    assert read_snapshot(snapshot, recipe=Path(FINETUNE)).header.frozen_tensors > 0
