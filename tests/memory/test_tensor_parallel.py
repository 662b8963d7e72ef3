"""Tensor parallelism in the memory model: the split of each parameter, against torch's own functions.

- A DTensor ``Shard(dim)`` piece is ``torch.chunk``'s (the slice FSDP2 then shards).
- ``tensor_parallel_dims`` reads the framework's own plan (``_get_parallel_plan``) and says which dim each
  parameter is split on. The oracle applies that same plan with torch's ``parallelize_module`` on a real
  one-process gloo mesh and reads the placements of the DTensors it made: the dims must be equal.
  Per-rank bytes against real multi-rank runs are `tests/nemo/test_memory_exact.py`'s.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from torch.distributed.tensor.parallel import ParallelStyle

from mmfreeze.memory.shards import tensor_parallel_slice
from mmfreeze.models.framework import choose_builder
from mmfreeze.models.loader import build_model
from mmfreeze.models.structure import structure_of
from mmfreeze.models.tensor_parallel import TensorParallelPlanError, framework_plan, tensor_parallel_dims
from tests.memory.test_explain_world_size import explain, write

pytestmark = pytest.mark.framework  # `.ci/framework_env` runs it too: there the framework's builder builds

parallelizer = pytest.importorskip("nemo_automodel.components.distributed.parallelizer",
                                   reason="the framework's tensor-parallel plan (the README's test command installs it)")

TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 131}
CONFIGS = {
    "LlamaForCausalLM": {"model_type": "llama", **TEXT},
    "LlavaForConditionalGeneration": {
        "model_type": "llava", "text_config": {"model_type": "llama", **TEXT},
        "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                          "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 8, "patch_size": 4}},
    "Qwen2_5_VLForConditionalGeneration": {
        "model_type": "qwen2_5_vl", "text_config": {**TEXT, "model_type": "qwen2_5_vl_text"},
        "vision_config": {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                          "out_hidden_size": 32}},
    "Gemma3ForConditionalGeneration": {  # the framework's optimised plan keeps q/k norms local (ReplicatedWithGradAllReduce)
        "model_type": "gemma3", "mm_tokens_per_image": 4, "text_config": {"model_type": "gemma3_text", **TEXT},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                          "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 8, "patch_size": 4}},
    "Mistral3ForConditionalGeneration": {
        "model_type": "mistral3", "text_config": {"model_type": "mistral", **TEXT},
        "vision_config": {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 64,
                          "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 16}},
}
AUTO = {"LlamaForCausalLM": "AutoModelForCausalLM"}
FRAMEWORK_BUILDS = choose_builder("auto").kind == "framework"
"""The framework's environment: its builder builds, and its plan reads the classes of the release it pins."""


@pytest.mark.parametrize("length", [1, 5, 64, 131])
@pytest.mark.parametrize("tp", [2, 3, 4, 8])
@pytest.mark.parametrize("dim", [0, 1])
def test_a_tensor_parallel_slice_is_torch_chunk_s_piece(length: int, tp: int, dim: int) -> None:
    shape = (length, 6) if dim == 0 else (6, length)
    pieces = torch.chunk(torch.empty(shape), tp, dim=dim)
    for rank in range(tp):
        held = tuple(pieces[rank].shape) if rank < len(pieces) else ((0, 6) if dim == 0 else (6, 0))
        assert tensor_parallel_slice(shape, dim, tp, rank) == held
    assert tensor_parallel_slice(shape, None, tp, 0) == shape


@pytest.fixture(scope="module")
def one_rank_mesh():
    """A real gloo process group of one rank, and its device mesh: ``parallelize_module`` makes real
    DTensors on it, whose placements say how the plan splits each parameter."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    from tests.distributed.launch import free_port

    assert not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("class_name", sorted(CONFIGS))
def test_the_split_of_each_parameter_is_where_torch_places_the_frameworks_plan(class_name: str, one_rank_mesh) -> None:
    from torch.distributed.tensor import DTensor, Shard
    from torch.distributed.tensor.parallel import parallelize_module

    config = {**CONFIGS[class_name], "architectures": [class_name]}
    auto = AUTO.get(class_name, "AutoModelForImageTextToText")
    meta = build_model(config, auto, source="tp.yaml")
    plan = framework_plan(meta, sequence_parallel=False, tp_size=2, source="tp.yaml")
    dims = tensor_parallel_dims(meta, structure_of(meta), plan, source="tp.yaml")

    model = build_model(config, auto, source="tp.yaml").to_empty(device="cpu")
    model.tie_weights()  # to_empty gives each name its own tensor
    # as the framework's parallelizer does it: the plan, torch's parallelize_module, then the tie restored
    parallelize_module(model, one_rank_mesh, parallelizer._get_parallel_plan(model, False, None, tp_size=2))
    parallelizer.ensure_tied_lm_head(model)
    placed = {name: next((p.dim for p in parameter.placements if isinstance(p, Shard)), None)
              for name, parameter in model.named_parameters() if isinstance(parameter, DTensor)}
    assert dims and dims == {name: dim for name, dim in placed.items() if dim is not None}, (dims, placed)


@pytest.mark.parametrize("class_name", ["LlamaForCausalLM", "Qwen2_5_VLForConditionalGeneration"])
def test_lora_adapters_are_split_where_the_frameworks_lora_styles_place_them(class_name: str, one_rank_mesh) -> None:
    """With LoRA, the framework injects the adapters first and swaps each torch style for its LoRA variant
    (``translate_to_lora``, as its parallelizer does): the adapters' splits are the DTensors it makes."""
    from nemo_automodel.components._peft.lora import PeftConfig, apply_lora_to_linear_modules
    from nemo_automodel.components.distributed.parallel_styles import translate_to_lora
    from torch.distributed.tensor import DTensor, Shard
    from torch.distributed.tensor.parallel import parallelize_module

    config = {**CONFIGS[class_name], "architectures": [class_name]}
    auto = AUTO.get(class_name, "AutoModelForImageTextToText")
    model = build_model(config, auto, source="tp.yaml").to_empty(device="cpu")
    apply_lora_to_linear_modules(model, PeftConfig(target_modules=["*_proj"], dim=4, alpha=8), skip_freeze=True)
    meta = build_model(config, auto, source="tp.yaml")
    adapters = frozenset(name for name, _ in model.named_parameters() if ".lora_" in name)
    plan = framework_plan(meta, sequence_parallel=False, tp_size=2, source="tp.yaml")
    dims = tensor_parallel_dims(meta, structure_of(meta), plan, adapters=adapters, source="tp.yaml")

    framework_plan_of_model = parallelizer._get_parallel_plan(model, False, None, tp_size=2)
    # translate_to_lora swaps the class of the style object it is given: copies keep the framework's own intact
    parallelize_module(model, one_rank_mesh,
                       {key: translate_to_lora(copy.copy(style)) for key, style in framework_plan_of_model.items()})
    placed = {name: next((p.dim for p in parameter.placements if isinstance(p, Shard)), None)
              for name, parameter in model.named_parameters() if isinstance(parameter, DTensor)}
    split = {name: dim for name, dim in placed.items() if dim is not None}
    assert {name: dims[name] for name in adapters if name in dims} == {name: split[name] for name in adapters if name in split}
    if FRAMEWORK_BUILDS or class_name == "LlamaForCausalLM":
        assert {0, 1} <= {dims[name] for name in adapters if name in dims}  # column- and row-parallel adapters
    else:  # under another transformers release the framework's plan for this VLM matches none of its layers
        assert not any(name in dims for name in adapters)


def test_a_tied_weight_the_plan_splits_under_one_name_alone_is_refused() -> None:
    """A tied LLaVA's plan (the framework's default one: no Hugging Face plan is found for it) splits lm_head but
    not the input embedding that shares its weight; a stock tp_size 2 run of it stops in its first forward.
    Gemma3's plan splits both on dim 0, and is sized (the differential test above, and a stock run)."""
    config = {**CONFIGS["LlavaForConditionalGeneration"], "architectures": ["LlavaForConditionalGeneration"],
              "tie_word_embeddings": True, "text_config": {**CONFIGS["LlavaForConditionalGeneration"]["text_config"],
                                                          "tie_word_embeddings": True}}
    meta = build_model(config, "AutoModelForImageTextToText", source="tp.yaml")
    assert meta.lm_head.weight is meta.get_input_embeddings().weight
    plan = framework_plan(meta, sequence_parallel=False, tp_size=2, source="tp.yaml")
    with pytest.raises(TensorParallelPlanError, match=r"splits lm_head\.weight but not the same tensor as") as raised:
        tensor_parallel_dims(meta, structure_of(meta), plan, source="tp.yaml")
    assert raised.value.key == "distributed.tp_size"


class _WholeModuleSharded(ParallelStyle):
    """A style of a release to come: it places parameters its own way (not one of torch's partition methods)."""

    def _apply(self, module, device_mesh):
        return module


def test_a_style_whose_placements_mmfreeze_does_not_follow_is_refused_naming_it() -> None:
    config = {**CONFIGS["LlamaForCausalLM"], "architectures": ["LlamaForCausalLM"]}
    meta = build_model(config, "AutoModelForCausalLM", source="tp.yaml")
    with pytest.raises(TensorParallelPlanError, match="_WholeModuleSharded") as raised:
        tensor_parallel_dims(meta, structure_of(meta), {"model.norm": _WholeModuleSharded()}, source="tp.yaml")
    assert raised.value.key == "distributed.tp_size"


def test_explain_sizes_a_tensor_parallel_recipe_per_rank_where_the_framework_builds(tmp_path: Path) -> None:
    """Where another transformers release is installed (the test environment), the plan the framework would
    pick reads that release's classes, not the ones it trains: refused, naming the key."""
    result = explain("--format", "json", "--world-size", "4", str(write(tmp_path, tp_size=2)))
    if not FRAMEWORK_BUILDS:
        assert result.exit_code == 3 and "distributed.tp_size" in result.output, result.output
        assert "is sized where the framework's builder builds" in result.output
        return
    assert result.exit_code == 0, result.output
    ranks = json.loads(result.stdout)["memory"]["ranks"]
    assert [rank["rank"] for rank in ranks] == [0, 1, 2, 3]
    whole = json.loads(explain("--format", "json", "--world-size", "2", str(write(tmp_path))).stdout)["memory"]["ranks"]
    # two data-parallel ranks either way; tensor parallelism halves what each holds of the split layers
    assert ranks[0]["parameters"] < whole[0]["parameters"] and ranks[0]["gradients"] < whole[0]["gradients"]


@pytest.mark.parametrize(("kwargs", "world", "key"), [
    ({"tp_size": 2, "dp_size": "4"}, "4", "distributed.dp_size"),
    ({"tp_size": 4}, "6", "world_size"),
    ({"tp_size": 2, "extra": "  tp_plan: my_plans.llava\n"}, "4", "distributed.tp_plan"),
])
def test_what_tensor_parallelism_cannot_size_is_an_input_error_naming_the_key(tmp_path: Path, kwargs, world, key) -> None:
    result = explain("--world-size", world, str(write(tmp_path, **kwargs)))
    assert result.exit_code == 3, result.output
    assert key in result.output


def test_a_tp_size_the_frameworks_own_check_refuses_is_refused_with_its_words(tmp_path: Path) -> None:
    """4 attention heads do not divide over 3 ranks: ``validate_tp_mesh``'s own message, naming the key
    (where the framework builds; elsewhere the builder's refusal comes first, as above)."""
    result = explain("--world-size", "6", str(write(tmp_path, tp_size=3)))
    assert result.exit_code == 3, result.output
    assert "distributed.tp_size" in result.output
    if FRAMEWORK_BUILDS:
        assert "must be divisible by TP size (3)" in result.output, result.output


def test_what_a_change_costs_under_tensor_parallelism_is_the_difference_of_its_two_figures(tmp_path: Path) -> None:
    """A diff's cost sizes the recipe before, after, and per moved group: each of them is split by the plan
    (where the framework builds; elsewhere the cost says why it is not sized)."""
    from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
    from mmfreeze.memory.change import change_cost
    from mmfreeze.memory.recipe import recipe_memory
    from mmfreeze.models.cache import StructureCache
    from mmfreeze.models.loader import load_structure
    from mmfreeze.recipes.recipe import load_recipe

    recipe = load_recipe(write(tmp_path, tp_size=2), root=tmp_path)
    loaded = load_structure(model_request(recipe, choose_builder("auto")), StructureCache(None))
    after = recipe_frozen_set(recipe, loaded.structure)
    tower = frozenset(name for name in after.frozen if name.startswith("model.vision_tower."))
    group = ("newly frozen", "model.vision_tower (vision tower)")
    cost = change_cost(recipe, after, after.frozen - tower, {group: tower}, world_size=4, loaded=loaded)
    if not FRAMEWORK_BUILDS:
        assert cost.total is None and cost.unsized.startswith("distributed.tp_size: is sized where"), cost.unsized
        return
    assert cost.unsized is None, cost.unsized
    before = recipe_memory(recipe, after, world_size=4, frozen_names=after.frozen - tower, loaded=loaded)
    now = recipe_memory(recipe, after, world_size=4, loaded=loaded)
    saved = min(sum((n.parameters, n.gradients, n.optimizer)) - sum((b.parameters, b.gradients, b.optimizer))
                for b, n in zip(before.ranks, now.ranks, strict=True))
    assert cost.total is not None and cost.total.total == saved < 0
    assert [g.delta for g in cost.groups] == [cost.total]
