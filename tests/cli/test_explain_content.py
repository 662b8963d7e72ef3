"""What `mmfreeze explain` prints for a bundled recipe: the modules, each module's frozen counts, the
FSDP plan and the setup verdict, and what `--rank-uniform` changes (text and JSON).

The recipe is `audio_finetune/qwen2_audio/qwen2_audio_7b_librispeech.yaml`: Qwen2-Audio 7B with
the audio tower frozen and the audio projector trainable, no `distributed.multimodal` section.
The projector is trainable and conditionally executed, and the class has no dummy forward for
audio, so setup rejects the policy unless the data side declares audio rank-uniform; with
`--rank-uniform audio` it is accepted. Expected counts are computed here from the recipe's built
structure and the frozen set mmfreeze's engine computes for it, not read from explain.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.cli.main import cli
from mmfreeze.freeze.engine import compute_frozen_set
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.resolver.overrides import override_specs
from tests.conftest import EXAMPLE_CONFIGS

RECIPE = EXAMPLE_CONFIGS / "audio_finetune" / "qwen2_audio" / "qwen2_audio_7b_librispeech.yaml"
# (path, modality, role, conditionally executed): Qwen2AudioForConditionalGeneration's audio modules.
MODULES = [
    ("model.audio_tower", "audio", "tower", True),
    ("model.multi_modal_projector", "audio", "projector", True),
]
WIDE = 400  # no table cell is wrapped or cut


@cache
def expected_groups() -> tuple[dict[str, Any], ...]:
    """Per group (each module, then the language model): tensors, frozen tensors, parameters, frozen
    parameters — counted over the built structure's parameter names and shapes against the frozen
    set mmfreeze's engine computes for the recipe."""
    recipe = load_recipe(RECIPE)
    structure = load_structure(model_request(recipe), StructureCache(None)).structure
    frozen = compute_frozen_set(structure, recipe.document, source=recipe.display_path,
                                override_specs=override_specs(recipe.module_overrides)).frozen
    assert structure.parameters and frozen  # the recipe freezes something: the counts below can be wrong
    groups, claimed = [], set()
    for path, modality, role, _ in MODULES:
        members = [info for info in structure.parameters if info.name.startswith(f"{path}.")]
        claimed.update(info.name for info in members)
        groups.append(_counts(f"{modality}.{role}", path, members, frozen))
    rest = [info for info in structure.parameters if info.name not in claimed]
    groups.append(_counts("language_model", None, rest, frozen))
    return tuple(groups)


def _counts(group: str, path: str | None, members: list, frozen: frozenset[str]) -> dict[str, Any]:
    frozen_members = [info for info in members if info.name in frozen]
    return {
        "group": group, "path": path,
        "tensors": len(members), "frozen_tensors": len(frozen_members),
        "parameters": sum(info.numel for info in members),
        "frozen_parameters": sum(info.numel for info in frozen_members),
    }


def _explain(*options: str, recipe: Path = RECIPE) -> Any:
    return CliRunner().invoke(cli, ["explain", str(recipe), *options], terminal_width=WIDE)


@pytest.fixture
def with_policy(tmp_path: Path) -> Path:
    """The recipe with one of mmfreeze's `distributed.multimodal` keys, so it has a policy to check."""
    recipe = tmp_path / RECIPE.name
    text = RECIPE.read_text().replace("  sequence_parallel: false\n", "  sequence_parallel: false\n  multimodal:\n    audio: {run_dummy_forward: auto}\n")
    recipe.write_text(text)
    return recipe


def _decoder_layers() -> int:
    return find_model_config("Qwen/Qwen2-Audio-7B-Instruct").config["text_config"]["num_hidden_layers"]


def test_explain_lists_the_recipe_s_multimodal_modules() -> None:
    explanation = json.loads(_explain("--format", "json").stdout)
    listed = [(m["path"], m["modality"], m["role"], m["conditionally_executed"]) for m in explanation["multimodal_modules"]]
    assert listed == MODULES
    sizes = {group["path"]: group["parameters"] for group in expected_groups() if group["path"]}
    assert {m["path"]: m["parameters"] for m in explanation["multimodal_modules"]} == sizes
    text = _explain().output
    for path, modality, role, _ in MODULES:
        assert re.search(rf"│ {re.escape(path)} +│ {modality} +│ {role} +│ yes +│ +{sizes[path]:,} │ table +│", text), path


def test_explain_reports_each_module_s_frozen_counts_as_the_engine_computes_them() -> None:
    explanation = json.loads(_explain("--format", "json").stdout)
    reported = [{k: g[k] for k in ("group", "path", "tensors", "frozen_tensors")}
                | {"parameters": g["parameters"], "frozen_parameters": g["frozen_parameters"]}
                for g in explanation["freezing"]["groups"]]
    assert reported == list(expected_groups())
    # The recipe's intent, stated plainly: the tower is wholly frozen, the projector and LM train.
    assert [g["state"] for g in explanation["freezing"]["groups"]] == ["frozen", "trainable", "trainable"]
    text = _explain().output
    for group in expected_groups():
        state = "frozen" if group["frozen_tensors"] == group["tensors"] else "trainable"
        row = (rf"│ {re.escape(group['group'])} +│ {re.escape(group['path'] or '')} +│ {state} +"
               rf"│ {group['frozen_tensors']}/{group['tensors']} +"
               rf"│ {group['frozen_parameters']:,}/{group['parameters']:,} +│")
        assert re.search(row, text), row
    frozen_tensors = sum(g["frozen_tensors"] for g in expected_groups())
    frozen_parameters = sum(g["frozen_parameters"] for g in expected_groups())
    tensors = sum(g["tensors"] for g in expected_groups())
    parameters = sum(g["parameters"] for g in expected_groups())
    assert (f"frozen: {frozen_tensors:,} tensors, {frozen_parameters:,} parameters; trainable: "
            f"{tensors - frozen_tensors:,} tensors, {parameters - frozen_parameters:,} parameters") in text


def test_a_recipe_without_mmfreeze_distributed_keys_has_no_policy_to_check() -> None:
    plain = _explain("--check")
    assert plain.exit_code == 0, plain.output
    assert ("distributed.multimodal: none of mmfreeze's keys in this recipe: the framework shards it with its own "
            "FSDP2 plan, and mmfreeze checks nothing at setup") in " ".join(plain.output.split())
    assert "rejected at setup" not in plain.output and "FSDP units" not in plain.output
    assert json.loads(_explain("--format", "json").stdout)["distributed"]["verdict"] == "none"


def test_without_a_rank_uniform_declaration_setup_rejects_the_policy_and_check_exits_rejected(with_policy: Path) -> None:
    plain = _explain(recipe=with_policy)
    assert plain.exit_code == 0, plain.output
    assert "distributed.multimodal on mesh (dp=2): rejected at setup" in plain.output
    flat = " ".join(plain.output.split())
    assert ("distributed.multimodal.audio.run_dummy_forward: auto requires a dummy forward for "
            "model.multi_modal_projector") in flat
    assert "batch contract: rank-uniform modalities none" in flat
    assert "FSDP units" not in plain.output  # no plan is printed for a rejected policy
    assert _explain("--check", recipe=with_policy).exit_code == ExitCode.REJECTED == 6
    distributed = json.loads(_explain("--format", "json", recipe=with_policy).stdout)["distributed"]
    assert distributed["verdict"] == "rejected" and distributed["batch_contract"]["rank_uniform"] == []


def test_rank_uniform_audio_turns_the_rejection_into_an_accepted_plan() -> None:
    checked = _explain("--rank-uniform", "audio", "--check")
    assert checked.exit_code == 0, checked.output
    lines = [" ".join(line.split()) for line in checked.output.splitlines()]
    layers = _decoder_layers()
    # The trainable projector and each decoder layer are FSDP units, the root last; the frozen
    # tower stays with the root (default frozen_sharding: root).
    units = ["model.multi_modal_projector", *(f"model.language_model.layers.{i}" for i in range(layers)), "<root>"]
    shown = [*units[:5], f"... ({len(units) - 6} more)", units[-1]]
    assert "distributed.multimodal on mesh (dp=2): accepted" in lines
    assert f"FSDP units ({len(units)}, root last): {', '.join(shown)}" in lines
    assert "root-owned: model.audio_tower" in lines
    assert "replicated: none" in lines
    assert ("dummy forward (audio): off — batch contract guarantees rank-uniform audio execution "
            "(mmfreeze explain --rank-uniform)") in lines
    assert "batch contract: rank-uniform modalities audio (mmfreeze explain --rank-uniform)" in lines
    distributed = json.loads(_explain("--rank-uniform", "audio", "--format", "json").stdout)["distributed"]
    assert distributed["verdict"] == "accepted"
    assert [unit["path"] for unit in distributed["fsdp_units"]] == units
    assert distributed["root_owned"] == ["model.audio_tower"] and distributed["replicated"] == []


@pytest.mark.parametrize("modality", ["vision", "video"])
def test_rank_uniform_for_a_modality_the_recipe_does_not_execute_changes_nothing(modality: str) -> None:
    """Only the modality that needs it lifts the rejection: declaring another one does not."""
    result = _explain("--rank-uniform", modality, "--check")
    assert result.exit_code == ExitCode.REJECTED, result.output
    assert "rejected at setup" in result.output


def test_explain_names_the_built_class_with_the_module_that_defines_it() -> None:
    """A class name alone is ambiguous: the framework and transformers both define some."""
    explanation = json.loads(_explain("--format", "json").stdout)
    assert (explanation["architecture"], explanation["architecture_module"]) == (
        "Qwen2AudioForConditionalGeneration", "transformers.models.qwen2_audio.modeling_qwen2_audio")
    assert ("│ architecture │ Qwen2AudioForConditionalGeneration "
            "(transformers.models.qwen2_audio.modeling_qwen2_audio)") in " ".join(_explain().output.split())
