"""What a change of the trainable set costs per rank (mmfreeze.memory.change): the memory model
before and after on one tiny LLaVA, whole and per group; and what cannot be sized is said with
its key, never guessed."""

from __future__ import annotations

from pathlib import Path

from mmfreeze.counts import readable_bytes, readable_count
from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.memory.change import NO_WORLD_SIZE, change_cost
from mmfreeze.memory.recipe import recipe_memory
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import load_recipe
from tests.memory.test_explain_world_size import TEACHER, write

GROUP = ("newly frozen", "model.vision_tower (vision tower)")


def frozen_tower(tmp_path: Path, **recipe: str):  # noqa: ANN202 (a recipe, its set, the tower's names)
    """The recipe freezes its vision tower: the change is from the tower trainable to it frozen."""
    loaded = load_recipe(write(tmp_path, **recipe), root=tmp_path)
    result = recipe_frozen_set(loaded, load_structure(model_request(loaded), StructureCache(None)).structure)
    return loaded, result, frozenset(name for name in result.frozen if name.startswith("model.vision_tower."))


def test_freezing_a_tower_saves_its_gradients_and_adam_states_on_the_rank_that_changes_most(tmp_path: Path) -> None:
    recipe, after, tower = frozen_tower(tmp_path)
    cost = change_cost(recipe, after, after.frozen - tower, {GROUP: tower}, world_size=2)
    before = recipe_memory(recipe, after, world_size=2, frozen_names=after.frozen - tower)
    now = recipe_memory(recipe, after, world_size=2)
    saved = min((n.parameters + n.gradients + n.optimizer) - (b.parameters + b.gradients + b.optimizer)
                for b, n in zip(before.ranks, now.ranks, strict=True))
    assert cost.total is not None and cost.total.total == saved < 0
    assert cost.total.trainable == -sum(info.numel for info in after.structure.parameters if info.name in tower)
    assert cost.total.describe() == (f"-{readable_count(-cost.total.trainable)} trainable parameters: "
                                     f"-{readable_bytes(-saved)} per rank at 2 ranks "
                                     "(gradients + AdamW states; activations not counted)")
    [group] = cost.groups
    assert (group.kind, group.label, group.delta) == (*GROUP, cost.total)  # the only group is the whole change


def test_without_a_world_size_the_cost_says_so() -> None:
    cost = change_cost(None, None, frozenset(), {}, world_size=None)  # type: ignore[arg-type]  # never read
    assert (cost.total, cost.unsized) == (None, NO_WORLD_SIZE)
    assert cost.describe() == f"not sized: {NO_WORLD_SIZE}"


def test_an_optimizer_it_cannot_size_is_named_by_its_key_never_guessed(tmp_path: Path) -> None:
    recipe, after, tower = frozen_tower(tmp_path, optimizer="torch.optim.LBFGS")
    cost = change_cost(recipe, after, after.frozen - tower, {GROUP: tower}, world_size=2)
    assert cost.total is None and cost.groups == ()
    assert cost.unsized.startswith("optimizer._target_: cannot size the state of 'torch.optim.LBFGS'")


def test_a_distillation_recipe_s_change_costs_what_it_costs_without_its_teacher(tmp_path: Path) -> None:
    """The teacher holds the same bytes before and after a change of the student's set: the change's cost
    is the student's alone, and needs no teacher built."""
    recipe, after, tower = frozen_tower(tmp_path)
    alone = change_cost(recipe, after, after.frozen - tower, {GROUP: tower}, world_size=2)
    path = tmp_path / "recipe.yaml"
    path.write_text(path.read_text() + TEACHER)
    taught = load_recipe(path, root=tmp_path)
    assert "teacher_model" in taught.document
    cost = change_cost(taught, after, after.frozen - tower, {GROUP: tower}, world_size=2)
    assert cost.unsized is None and cost.total == alone.total and cost.groups == alone.groups
