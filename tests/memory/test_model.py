"""Per-rank bytes from the rules of docs/memory.md, on a hand-sized model."""

from __future__ import annotations

import pytest

from mmfreeze.memory.dtypes import parse_dtype
from mmfreeze.memory.errors import UndividableLayoutError, UnknownDtypeError, UnsizableOptimizerError
from mmfreeze.memory.layout import plan_fsdp_layout
from mmfreeze.memory.model import MemoryInputs, estimate_memory
from mmfreeze.memory.optimizer import optimizer_state
from mmfreeze.memory.recipe import check_uniform_trainable_dtypes
from mmfreeze.models.structure import ModelStructure, ParameterInfo

MODULES = {"": "M", "vision_tower": "Tower", "head": "Linear"}
PARAMS = (ParameterInfo(name="vision_tower.w", shape=(6, 4), requires_grad=True),
          ParameterInfo(name="head.weight", shape=(5, 4), requires_grad=True),
          ParameterInfo(name="head.bias", shape=(5,), requires_grad=True))
STRUCTURE = ModelStructure(class_name="M", modules=MODULES, module_aliases={}, parameters=PARAMS)
FROZEN = frozenset({"vision_tower.w"})
ADAMW = optimizer_state({"optimizer": {"_target_": "torch.optim.AdamW"}}, source="r.yaml")


def estimate(world: int, sharding: str = "root", dtype: str = "float32"):
    return estimate_memory(MemoryInputs(
        structure=STRUCTURE, frozen=FROZEN, dtypes={info.name: dtype for info in PARAMS},
        layout=plan_fsdp_layout(STRUCTURE, FROZEN, sharding), optimizer=ADAMW, world_size=world))


def test_two_ranks_padded_parameters_and_gradients_unpadded_optimizer_shards() -> None:
    """5 rows over 2 ranks: each rank stores 3 padded rows; rank 1's optimizer state holds 2."""
    result = estimate(2)
    padded = (3 * 4 + 3 * 4 + 3) * 4  # every parameter's padded shard, fp32
    assert [r.parameters for r in result.ranks] == [padded, padded]
    assert [r.gradients for r in result.ranks] == [(3 * 4 + 3) * 4] * 2  # trainable only, padded
    assert [r.optimizer for r in result.ranks] == [2 * (3 * 4 + 3) * 4 + 2 * 4, 2 * (2 * 4 + 2) * 4 + 2 * 4]


def test_replicate_keeps_the_frozen_tower_whole_on_every_rank() -> None:
    result = estimate(2, "replicate")
    assert result.ranks[0].parameters == (6 * 4 + 3 * 4 + 3) * 4
    assert result.replicated_tensors == 1


def test_the_all_gather_peak_is_the_largest_unit_unsharded_in_bf16() -> None:
    peak = estimate(4).all_gather_peak
    assert peak is not None and peak.unit == "" and peak.dtype == "bfloat16"
    assert peak.bytes == (8 * 4 + 8 * 4 + 8) * 2  # 6 and 5 rows padded to 2 per rank x 4 ranks


@pytest.mark.parametrize(("value", "name"), [("torch.bfloat16", "bfloat16"), ("bf16", "bfloat16"),
                                             ("float", "float32"), ("torch.float16", "float16")])
def test_dtype_names_read_as_the_framework_reads_them(value: str, name: str) -> None:
    assert parse_dtype(value, source="r.yaml", key="model.torch_dtype") == name


def test_a_dtype_that_cannot_be_known_names_the_key() -> None:
    with pytest.raises(UnknownDtypeError, match="model.torch_dtype"):
        parse_dtype("torch.int8", source="r.yaml", key="model.torch_dtype")


def test_an_optimizer_whose_state_cannot_be_sized_names_the_key() -> None:
    with pytest.raises(UnsizableOptimizerError, match=r"optimizer\._target_: cannot size .*Muon"):
        optimizer_state({"optimizer": {"_target_": "nemo_automodel.components.optim.optimizer.MuonConfig"}},
                        source="r.yaml")


def test_amsgrad_adds_a_third_moment() -> None:
    assert optimizer_state({"optimizer": {"_target_": "torch.optim.Adam", "amsgrad": True}}, source="r").moments == 3


@pytest.mark.parametrize(("section", "moments", "scalar_bytes"), [
    ({"_target_": "torch.optim.AdamW"}, 2, 4),
    ({"_target_": "nemo_automodel.components.optim.optimizer.AdamWConfig"}, 2, 4),
    ({"_target_": "torch.optim.SGD"}, 0, 0),
    ({"_target_": "torch.optim.SGD", "momentum": 0.9}, 1, 0),
    ({"_target_": "torch.optim.sgd.SGD", "momentum": 0.0}, 0, 0),
    ({"_target_": "torch.optim.RMSprop"}, 1, 4),
    ({"_target_": "torch.optim.RMSprop", "momentum": 0.9, "centered": True}, 3, 4),
    ({"_target_": "torch.optim.NAdam"}, 2, 8),
    ({"_target_": "torch.optim.Adagrad"}, 1, 4),
])
def test_each_torch_optimizer_keeps_its_own_tensors_and_scalars(section, moments, scalar_bytes) -> None:
    """torch 2.14's state per parameter (each measured on a stock run: tests/nemo/test_memory_exact.py)."""
    state = optimizer_state({"optimizer": section}, source="r")
    assert (state.moments, state.scalar_bytes) == (moments, scalar_bytes)


@pytest.mark.parametrize(("section", "key"), [
    ({"_target_": "torch.optim.SGD", "momentum": "high"}, "optimizer.momentum"),
    ({"_target_": "torch.optim.RMSprop", "momentum": -1}, "optimizer.momentum"),
    ({"_target_": "torch.optim.RMSprop", "centered": "yes"}, "optimizer.centered"),
    ({"_target_": "torch.optim.LBFGS"}, "optimizer._target_"),
])
def test_an_optimizer_option_that_cannot_be_read_names_its_key(section, key) -> None:
    with pytest.raises(UnsizableOptimizerError, match=rf"{key}: "):
        optimizer_state({"optimizer": section}, source="r")


def test_zero_ranks_is_refused() -> None:
    with pytest.raises(UndividableLayoutError, match="world_size"):
        estimate(0)


def test_one_gradient_buffer_per_unit_with_a_trainable_parameter() -> None:
    """No layer containers here: the root is the only unit, and it holds the trainable head."""
    result = estimate(2)
    assert (result.units, result.gradient_buffers) == (1, 1)


@pytest.mark.parametrize(("distributed", "world"), [
    ({"dp_size": 8}, 8), ({"dp_size": 4, "tp_size": 2, "ep_size": 4}, 8), ({"dp_size": None}, None),
    ({"dp_size": "none"}, None), ({"dp_size": 2, "dp_replicate_size": 2, "cp_size": 2}, 4)])
def test_the_recipe_s_world_size_is_dp_times_tp_cp_pp(distributed: dict, world: int | None) -> None:
    """``mesh_utils.py``: dp_size already counts dp_replicate; experts are carved out of the others."""
    from mmfreeze.memory.recipe import recipe_world_size

    assert recipe_world_size({"distributed": distributed}) == world


def test_a_framework_class_with_its_own_parallelizer_is_refused_unless_it_runs_the_shared_one_and_a_transformers_one_of_that_name_is_not() -> None:
    """Qwen3.5's parallelizer shards otherwise (its own ``_apply_fsdp_sharding``); dense Qwen3-VL's runs
    the shared path and sets a context-parallel mesh (measured: ``tests/nemo/test_memory_exact.py``)."""
    from dataclasses import replace

    from mmfreeze.memory.errors import MemoryModelError
    from mmfreeze.memory.recipe import check_shared_parallelizer

    own = replace(STRUCTURE, class_name="Qwen3_5ForConditionalGeneration",
                  class_module="nemo_automodel.components.models.qwen3_5.model")
    with pytest.raises(MemoryModelError, match="r.yaml: model: the framework shards Qwen3_5ForConditionalGeneration"):
        check_shared_parallelizer(own, source="r.yaml")
    check_shared_parallelizer(replace(own, class_module="transformers.models.qwen3_5.modeling_qwen3_5"), source="r")
    check_shared_parallelizer(replace(own, class_name="Qwen3VLForConditionalGeneration",
                                      class_module="nemo_automodel.components.models.qwen3_vl.model"), source="r")


def test_where_the_framework_builds_its_own_class_a_transformers_tree_is_not_sized() -> None:
    """``framework_classes.json``: 0.7.0 builds its own class for these architectures (Qwen3.5 with its own
    parallelizer; Gemma4; Mistral3 by config), so the transformers class the transformers builder built is not
    what trains. What the framework's builder built is (its own resolver chose the class, by config for
    Mistral3), unless it fell back to the transformers class; so is the transformers class of a recipe that
    says ``force_hf: true``."""
    from dataclasses import replace
    from pathlib import Path

    from mmfreeze.memory.errors import MemoryModelError
    from mmfreeze.memory.recipe import check_framework_class
    from mmfreeze.models.config_sources import ModelConfigSource
    from mmfreeze.models.framework import TRANSFORMERS_SPEC, BuildSpec
    from mmfreeze.models.loader import LoadedStructure, ModelRequest

    built = replace(STRUCTURE, class_module="transformers.models.x.modeling_x")
    framework = BuildSpec(kind="framework", framework_version="0.7.0")

    def loaded(architecture: str | None, build: BuildSpec = TRANSFORMERS_SPEC, note: str = "") -> LoadedStructure:
        config = {"architectures": [architecture]} if architecture else {}
        request = ModelRequest(model_id="m", auto_class="AutoModelForImageTextToText", recipe_dir=Path("."),
                               configs_dir=None, source="r", build=build)
        return LoadedStructure(request=request, source=ModelConfigSource(kind="local", location="m", config=config),
                               structure=replace(built, build_note=note), key="k")

    with pytest.raises(MemoryModelError, match="model: the framework builds .* sharded by its own parallelizer"):
        check_framework_class(loaded("Qwen3_5ForConditionalGeneration"), source="r")
    with pytest.raises(MemoryModelError, match="model: the framework builds .* but this environment built"):
        check_framework_class(loaded("Gemma4ForConditionalGeneration"), source="r")
    with pytest.raises(MemoryModelError, match="model: the framework may build .* but this environment built"):
        check_framework_class(loaded("Mistral3ForConditionalGeneration"), source="r")
    with pytest.raises(MemoryModelError, match="model: the framework may build .* but this environment built"):
        check_framework_class(loaded("Mistral3ForConditionalGeneration", framework, note="could not build"), source="r")
    check_framework_class(loaded("LlavaForConditionalGeneration"), source="r")
    check_framework_class(loaded(None), source="r")
    check_framework_class(loaded("Mistral3ForConditionalGeneration", framework), source="r")
    for architecture in ("Gemma4ForConditionalGeneration", "Qwen3_5ForConditionalGeneration"):
        check_framework_class(loaded(architecture, replace(TRANSFORMERS_SPEC, force_hf=True)), source="r")


def test_an_fsdp2_unit_that_would_train_two_dtypes_is_refused_as_fsdp2_refuses_it() -> None:
    """``FSDPParamGroup._init_mp_dtypes`` refuses a unit whose trainable parameters differ in dtype
    (one reduce-scatter buffer per unit); a frozen parameter of another dtype is fine."""
    layout = plan_fsdp_layout(STRUCTURE, FROZEN, "root")  # one root unit: all three tensors
    mixed = {"vision_tower.w": "float32", "head.weight": "bfloat16", "head.bias": "float32"}
    check_uniform_trainable_dtypes(layout, {**mixed, "head.bias": "bfloat16"}, FROZEN, source="r.yaml")
    with pytest.raises(UnknownDtypeError) as caught:
        check_uniform_trainable_dtypes(layout, mixed, FROZEN, source="r.yaml")
    assert caught.value.key == "model.torch_dtype"
    assert "FSDP2 unit (root) would train head.weight in bfloat16 and head.bias in float32" in str(caught.value)


def test_a_float16_recipe_of_a_model_with_patterns_kept_in_fp32_for_float16_alone_is_refused_naming_the_dtype() -> None:
    """``_keep_in_fp32_modules`` (not ``_strict``): transformers keeps those in fp32 in a float16 load only, which no
    run measured, so a float16 recipe is refused; in bfloat16 they load in the recipe's dtype."""
    from dataclasses import replace

    from mmfreeze.memory.recipe import stored_dtypes

    loose = replace(STRUCTURE, keep_in_fp32=("vision_tower",))
    kwargs = {"adapters": (), "replicated": (), "target": "nemo_automodel.X.from_pretrained", "source": "r"}
    with pytest.raises(UnknownDtypeError, match=r"model\.torch_dtype: M keeps vision_tower\.w .* in fp32 by name"):
        stored_dtypes(loose, base="float16", adapter="float16", **kwargs)
    assert stored_dtypes(loose, base="bfloat16", adapter="bfloat16", **kwargs)["vision_tower.w"] == "bfloat16"
    strict = replace(STRUCTURE, keep_in_fp32_strict=("vision_tower",))
    assert stored_dtypes(strict, base="float16", adapter="float16", **kwargs)["vision_tower.w"] == "float32"
