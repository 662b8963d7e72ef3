"""Issue #16: the builder is an explicit, recorded choice, and a snapshot built by transformers says
where the framework builds its own class (main environment, fast: no model is built).

The divergence test covers every bundled recipe: the expected statement comes from the committed
``framework_classes.json`` and the real header code (:func:`mmfreeze.snapshots.compute.builder_fields`,
which gives a snapshot its builder fields, over a structure of the built class, so nothing is built), and the same
values are what ``explain`` prints (:func:`mmfreeze.explain.builder.explain_builder`).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from mmfreeze.exceptions import MmfreezeError, SettingsError
from mmfreeze.explain.builder import explain_builder
from mmfreeze.freeze.recipe_model import model_request
from mmfreeze.boundary import names
from mmfreeze.models import framework
from mmfreeze.models.cache import StructureCache, structure_key
from mmfreeze.models.config_sources import find_model_config
from mmfreeze.models.framework import (
    TRANSFORMERS_BUILDER,
    TRANSFORMERS_SPEC,
    BuilderChoice,
    BuildSpec,
    choose_builder,
    divergence_statement,
    framework_class_for,
    spec_for_recipe,
)
from mmfreeze.models.loader import LoadedStructure
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.settings import default_settings, parse_settings
from mmfreeze.snapshots.compute import builder_fields
from mmfreeze.workspace import Workspace
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT

NEMO_TARGET = "nemo_automodel.NeMoAutoModelForImageTextToText.from_pretrained"
FRAMEWORK = BuilderChoice(kind="framework", framework_version="0.7.0", reason="test")


def fake_versions(monkeypatch: pytest.MonkeyPatch, *, nemo: str, transformers: str, requires: list[str]) -> None:
    versions = {"nemo-automodel": nemo, "transformers": transformers}
    monkeypatch.setattr(framework, "installed_version", lambda name: versions.get(name, "missing"))
    monkeypatch.setattr(names, "requires", lambda name: requires)


def test_auto_builds_with_transformers_when_the_framework_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, nemo="missing", transformers="5.24.0", requires=[])
    choice = choose_builder("auto")
    assert (choice.kind, choice.label) == ("transformers", "transformers")
    assert "not installed" in choice.reason


def test_auto_builds_with_transformers_when_the_installed_transformers_is_not_the_frameworks(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, nemo="0.7.0", transformers="5.24.0", requires=["transformers==5.18.0", "torch>=2.8.0"])
    choice = choose_builder("auto")
    assert choice.kind == "transformers"
    assert "requires transformers==5.18.0, but transformers 5.24.0 is installed" in choice.reason


def test_auto_builds_with_the_framework_when_its_transformers_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, nemo="0.7.0", transformers="5.18.0",
                  requires=["transformers==5.18.0", 'flash-attn<=2.8.3; extra == "fa"'])
    choice = choose_builder("auto", "transformers")
    assert (choice.kind, choice.label, choice.fallback) == ("framework", "nemo-automodel 0.7.0", "transformers")
    assert "satisfies its transformers==5.18.0" in choice.note()


def test_asking_for_the_framework_without_it_is_a_settings_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, nemo="missing", transformers="5.24.0", requires=[])
    with pytest.raises(SettingsError, match="needs nemo-automodel installed"):
        choose_builder("framework")
    assert choose_builder("transformers").kind == "transformers"


def test_builder_settings_parse_and_reject_unknown_values(tmp_path: Path) -> None:
    settings = parse_settings({"builder": "framework", "builder_fallback": "transformers"}, root=tmp_path)
    assert (settings.builder, settings.builder_fallback) == ("framework", "transformers")
    assert settings.overridden(builder="transformers").builder == "transformers"
    with pytest.raises(SettingsError, match="expected one of 'auto', 'framework', 'transformers'; got 'nemo'"):
        parse_settings({"builder": "nemo"}, root=tmp_path)


def test_only_the_frameworks_own_targets_build_framework_classes() -> None:
    assert spec_for_recipe(FRAMEWORK, "transformers.AutoModelForImageTextToText.from_pretrained", {}).kind == "transformers"
    assert spec_for_recipe(TRANSFORMERS_BUILDER, NEMO_TARGET, {}).kind == "transformers"
    spec = spec_for_recipe(FRAMEWORK, NEMO_TARGET, {"force_hf": True})
    assert (spec.kind, spec.force_hf) == ("framework", True)
    beside_framework = BuilderChoice(kind="transformers", stand_in="0.7.0", reason="test")
    spec = spec_for_recipe(beside_framework, NEMO_TARGET, {"force_hf": True})
    # the same build (and structure key) as a transformers target
    assert (spec.kind, spec.force_hf, spec.identity()) == ("transformers", True, TRANSFORMERS_SPEC.identity())


def test_force_hf_states_no_divergence_since_the_framework_then_builds_the_transformers_class() -> None:
    config = {"architectures": ["Qwen2_5OmniForConditionalGeneration"]}
    built = "Qwen2_5OmniForConditionalGeneration"
    plain = spec_for_recipe(TRANSFORMERS_BUILDER, NEMO_TARGET, {})
    forced = spec_for_recipe(TRANSFORMERS_BUILDER, NEMO_TARGET, {"force_hf": True})
    assert "Qwen2_5OmniThinkerForConditionalGeneration" in divergence_statement(config, built, target=NEMO_TARGET, spec=plain)
    assert divergence_statement(config, built, target=NEMO_TARGET, spec=forced) == ""


def test_structure_key_names_the_builder() -> None:
    config = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"]}
    keys = {
        structure_key(config, "AutoModelForImageTextToText"),
        structure_key(config, "AutoModelForImageTextToText", BuildSpec(kind="framework", framework_version="0.7.0")),
        structure_key(config, "AutoModelForImageTextToText", BuildSpec(kind="framework", framework_version="0.8.0")),
        structure_key(config, "AutoModelForImageTextToText", BuildSpec(kind="framework", framework_version="0.7.0",
                                                                         fallback="transformers")),
    }
    assert len(keys) == 4


@pytest.mark.skipif(importlib.util.find_spec("nemo_automodel") is None, reason="nemo-automodel is not installed")
def test_committed_framework_classes_json_is_the_scripts_output_for_the_installed_framework() -> None:
    completed = subprocess.run([sys.executable, "scripts/framework_classes.py", "--check"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr



def test_committed_framework_renames_json_is_the_scripts_output_for_the_bundled_snapshots() -> None:
    """``framework_renames.json`` is read off the bundled snapshots that the framework's classes made,
    which `.ci/framework_env` checks against those classes and their state-dict adapters."""
    completed = subprocess.run([sys.executable, "scripts/framework_renames.py", "--check"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "matches the bundled snapshots" in completed.stdout

REGISTERED_THEN_BUILT = """
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
import nemo_automodel._transformers.registry  # registers the framework's config classes with AutoConfig
from mmfreeze.models.build import build_transformers_config
for model_type in ("deepseek_v4", "minimax_m3_vl"):
    registered = CONFIG_MAPPING[model_type].__module__.split(".")[0]
    built = type(build_transformers_config({"model_type": model_type})).__module__.split(".")[0]
    print(model_type, registered, built)
"""


@pytest.mark.slow  # a fresh process imports the framework's registry and builds twice
@pytest.mark.skipif(importlib.util.find_spec("nemo_automodel") is None, reason="nemo-automodel is not installed")
def test_a_transformers_build_ignores_the_config_classes_the_framework_registers() -> None:
    """Once nemo-automodel's registry is imported, AutoConfig maps deepseek_v4 and minimax_m3_vl to
    the framework's config classes; a transformers build in the same process still gets
    transformers' own (else it depends on whether a framework build ran first). In a subprocess:
    the registration changes transformers for the rest of the process that imports it."""
    completed = subprocess.run([sys.executable, "-c", REGISTERED_THEN_BUILT], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "deepseek_v4 nemo_automodel transformers", "minimax_m3_vl nemo_automodel transformers",
    ]


def test_framework_data_records_config_dependent_choices() -> None:
    assert framework.framework_data()["nemo_automodel"] == "0.7.0"
    mistral = framework_class_for({"architectures": ["Mistral3ForConditionalGeneration"]})
    assert mistral is not None and mistral.config_dependent
    assert [name for _, name in mistral.classes] == ["Mistral3FP8VLMForConditionalGeneration", "Mistral3ForConditionalGeneration"]
    omni = framework_class_for({"architectures": ["Qwen2_5OmniForConditionalGeneration"]})
    assert omni is not None and not omni.config_dependent
    assert omni.classes == (("nemo_automodel.components.models.qwen2_5_omni.model", "Qwen2_5OmniThinkerForConditionalGeneration"),)
    assert framework_class_for({"architectures": ["LlavaForConditionalGeneration"]}) is None


# -- every bundled recipe ----------------------------------------------------------------------


def bundled_recipes() -> list[Path]:
    return sorted(EXAMPLE_CONFIGS.rglob("*.yaml"))


OMNI_THINKER = "Qwen2_5OmniThinkerForConditionalGeneration (nemo_automodel.components.models.qwen2_5_omni.model)"
QWEN3_VL = "Qwen3VLForConditionalGeneration (nemo_automodel.components.models.qwen3_vl.model)"
QWEN3_VL_MOE = "Qwen3VLMoeForConditionalGeneration (nemo_automodel.components.models.qwen3_vl_moe.model)"
QWEN3_5_MOE = "Qwen3_5MoeForConditionalGeneration (nemo_automodel.components.models.qwen3_5_moe.model)"
GEMMA4 = "Gemma4ForConditionalGeneration (nemo_automodel.components.models.gemma4_moe.model)"
KIMI = "KimiK25VLForConditionalGeneration (nemo_automodel.components.models.kimi_k25_vl.model)"
MISTRAL3 = ("Mistral3FP8VLMForConditionalGeneration (nemo_automodel.components.models.mistral3_vlm.model) or "
            "Mistral3ForConditionalGeneration (nemo_automodel.components.models.mistral4.model)")
DIVERGENT: dict[str, str] = {
    # recipe -> the framework class(es) its header names (from MODEL_ARCH_MAPPING of nemo-automodel 0.7.0)
    "audio_finetune/gemma4/gemma4_e2b_librispeech.yaml": GEMMA4,
    "audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_librispeech.yaml": OMNI_THINKER,
    "audio_finetune/qwen3_omni_moe/qwen3_omni_30b_a3b_common_voice_ep.yaml":
        "Qwen3OmniMoeThinkerForConditionalGeneration (nemo_automodel.components.models.qwen3_omni_moe.model)",
    "distillation/qwen3_vl_32b_to_4b_chartqa.yaml": QWEN3_VL,
    "text_finetune/llama3_1_8b_ultrachat_sft.yaml": "LlamaForCausalLM (nemo_automodel.components.models.llama.model)",
    "text_finetune/qwen3_8b_teacher_warmup.yaml": "Qwen3ForCausalLM (nemo_automodel.components.models.qwen3.model)",
    "vlm_finetune/gemma4/gemma4_e2b_cauldron_ai2d.yaml": GEMMA4,
    "vlm_finetune/gemma4/gemma4_e2b_cord_v2_vision_tuned.yaml": GEMMA4,
    "vlm_finetune/gemma4/gemma4_e2b_speech_vision_mix.yaml": GEMMA4,
    "vlm_finetune/kimi_k25/kimi_k25_cord_v2_ep.yaml": KIMI,
    "vlm_finetune/minimax_m3/minimax_m3_vl_medpix_ep32.yaml":
        "MiniMaxM3SparseForConditionalGeneration (nemo_automodel.components.models.minimax_m3_vl.model)",
    "vlm_finetune/mistral3/mistral_small_3_1_24b_pixmo.yaml": MISTRAL3,
    "vlm_finetune/qwen3_5/qwen3_5_9b_cord_v2.yaml":
        "Qwen3_5ForConditionalGeneration (nemo_automodel.components.models.qwen3_5.model)",
    "vlm_finetune/qwen3_5_moe/qwen3_5_35b_a3b_cauldron.yaml": QWEN3_5_MOE,
    "vlm_finetune/qwen3_vl/qwen3_vl_4b_mmmu.yaml": QWEN3_VL,
    "vlm_finetune/qwen3_vl/qwen3_vl_8b_cord_v2.yaml": QWEN3_VL,
    "vlm_finetune/qwen3_vl/qwen3_vl_8b_docvqa_mergers.yaml": QWEN3_VL,
    "vlm_finetune/qwen3_vl/qwen3_vl_8b_long_video_cp.yaml": QWEN3_VL,
    "vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_cauldron_ep.yaml": QWEN3_VL_MOE,
    "vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_cauldron_router_rate.yaml": QWEN3_VL_MOE,
    "vlm_finetune/qwen3_vl_moe/qwen3_vl_30b_a3b_medpix.yaml": QWEN3_VL_MOE,
    "vlm_peft/kimi_k25/kimi_k25_lora_docvqa.yaml": KIMI,
    "vlm_peft/mistral3/mistral_small_lora_cord.yaml": MISTRAL3,
    "vlm_peft/qwen3_5_moe/qwen3_5_35b_a3b_lora_medpix.yaml": QWEN3_5_MOE,
    "vlm_peft/qwen3_vl/qwen3_vl_8b_lora_chartqa.yaml": QWEN3_VL,
    "vlm_peft/qwen3_vl_moe/qwen3_vl_30b_a3b_lora_cord.yaml": QWEN3_VL_MOE,
    # Only hypothetically built by transformers (this test's record says so): transformers has no
    # muse_glimmer class, so a real run builds the framework's (tests/cli/test_model_shapes.py).
    "vlm_finetune/muse_glimmer/muse_glimmer_30b_medpix.yaml":
        "MuseGlimmerForConditionalGeneration (nemo_automodel.components.models.muse_glimmer.model)",
    # The same: the hub's LLaVA-OneVision-1.5 config is custom code for transformers.
    "vlm_finetune/llava_onevision1_5/llava_onevision1_5_8b_cord_v2.yaml":
        "LLaVAOneVision1_5_ForConditionalGeneration (nemo_automodel.components.models.llava_onevision.model)",
}
"""Not listed, though its architecture is the framework's: qwen2_5_omni_7b_av_mix.yaml, whose
model says ``force_hf: true`` (the framework then builds transformers' own class)."""


def expected_statement(recipe: str, built: str) -> str:
    classes = DIVERGENT.get(recipe.removeprefix("example_configs/"))
    if classes is None:
        return ""
    if classes == MISTRAL3:
        return (f"built as transformers class {built}; the framework may build its own {classes} "
                "for this architecture, depending on the config")
    return f"built as transformers class {built}; the framework builds its own {classes} for this architecture"


def test_every_recipe_the_framework_builds_differently_says_so_in_header_and_explain(tmp_path: Path) -> None:
    """Builder transformers (the main environment): each recipe in DIVERGENT carries the statement
    in its snapshot header (the header's builder fields, :func:`builder_fields`, for the class built)
    and its explain output, every other bundled recipe none."""
    workspace = Workspace(settings=default_settings(REPO_ROOT), structures=StructureCache(tmp_path / "cache"),
                          documents=YamlDocuments(REPO_ROOT))
    stated = set()
    for path in bundled_recipes():
        try:
            recipe = workspace.recipe(path)
        except MmfreezeError:
            continue  # not a recipe (or not one that reads): the snapshot tests cover those
        built = "BuiltClass"
        structure = ModelStructure(class_name=built, modules={}, module_aliases={}, parameters=())
        request = workspace.request(recipe)
        header = builder_fields(structure, request, workspace.config(request).config, target=recipe.model.target)
        expected = expected_statement(recipe.display_path, built)
        assert header == {"builder": "transformers", "divergence": expected}, recipe.display_path
        loaded = LoadedStructure(request=model_request(recipe), source=find_model_config(recipe.model.model_id),
                                 structure=structure, key="")
        explained = explain_builder(TRANSFORMERS_BUILDER, loaded, target=recipe.model.target)
        assert (explained["builder"], explained["divergence"]) == ("transformers", expected)
        if expected:
            stated.add(recipe.display_path.removeprefix("example_configs/"))
    assert stated == set(DIVERGENT)


def test_a_fallback_is_stated_with_its_reason(tmp_path: Path) -> None:
    recipe = load_recipe(EXAMPLE_CONFIGS / "vlm_finetune/qwen3_5/qwen3_5_9b_cord_v2.yaml", root=REPO_ROOT)
    choice = BuilderChoice(kind="framework", framework_version="0.7.0", fallback="transformers", reason="test")
    source = find_model_config(recipe.model.model_id)
    structure = ModelStructure(class_name="Qwen3_5ForConditionalGeneration", modules={}, module_aliases={},
                               parameters=(), build_note="Qwen3_5ForConditionalGeneration: needs fla")
    explained = explain_builder(choice, LoadedStructure(request=model_request(recipe, choice), source=source,
                                                        structure=structure, key=""), target=recipe.model.target)
    assert explained["builder"] == "transformers (fallback from nemo-automodel 0.7.0)"
    assert explained["divergence"].endswith("could not be built on meta here (Qwen3_5ForConditionalGeneration: needs fla)")


def test_a_framework_class_that_cannot_be_built_on_meta_is_an_error_unless_fallback_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The framework's class fails on meta: a ModelBuildError naming it and the recipe; with
    ``fallback = transformers`` the transformers class is built and the structure says why."""
    from mmfreeze.exceptions import ModelBuildError
    from mmfreeze.models import framework_build
    from mmfreeze.models.build import build_transformers_config
    from mmfreeze.models.loader import build_structure

    class NeedsKernels:
        __name__ = "NeedsKernels"

        def __init__(self, config: object) -> None:
            raise ImportError("needs the fla extra")

    config = find_model_config("Qwen/Qwen2-VL-2B-Instruct").config
    monkeypatch.setattr(framework_build, "build_framework_config", build_transformers_config)
    monkeypatch.setattr(framework_build, "resolve_framework_class", lambda config: NeedsKernels)
    strict = BuildSpec(kind="framework", framework_version="0.7.0")
    with pytest.raises(ModelBuildError, match="could not build NeedsKernels on the meta device") as raised:
        build_structure(config, "AutoModelForImageTextToText", source="r.yaml", build=strict)
    assert (raised.value.source, raised.value.key) == ("r.yaml", "model")
    assert ('`builder_fallback = "transformers"` under [tool.mmfreeze] (or --builder-fallback transformers) builds '
            "the transformers class instead") in raised.value.message, "the setting that fixes it is named"
    lenient = BuildSpec(kind="framework", framework_version="0.7.0", fallback="transformers")
    structure = build_structure(config, "AutoModelForImageTextToText", source="r.yaml", build=lenient)
    assert structure.class_name == "Qwen2VLForConditionalGeneration"
    assert structure.build_note.startswith("NeedsKernels: ") and "needs the fla extra" in structure.build_note
