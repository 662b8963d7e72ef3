"""The guard as a test assertion, for a repository's own pytest suite (no pytest import needed).

::

    from mmfreeze.guard.pytest_helpers import assert_frozen_set_matches

    def test_training_setup_trains_what_the_recipe_says():
        model, optimizer = build_training_setup("recipes/vlm/qwen2_5_vl_7b.yaml", device="meta")
        assert_frozen_set_matches(model, "recipes/vlm/qwen2_5_vl_7b.yaml", optimizer=optimizer)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import FrozenSetMismatchError
from mmfreeze.guard.locate import RecipeRef
from mmfreeze.guard.report import VerifiedFrozenSet
from mmfreeze.guard.verify import verify_frozen_set

if TYPE_CHECKING:
    from torch import nn


def assert_frozen_set_matches(
    model: nn.Module, recipe: RecipeRef, *, optimizer: Any = None, snapshot: str | os.PathLike[str] | None = None
) -> VerifiedFrozenSet:
    """:func:`~mmfreeze.verify_frozen_set` on this process alone; a mismatch fails the test with the
    guard's message (an ``AssertionError``). A missing snapshot stays a
    :class:`~mmfreeze.exceptions.SnapshotError`: the test cannot run, rather than fail."""
    __tracebackhide__ = True
    try:
        return verify_frozen_set(model, recipe, optimizer=optimizer, snapshot=snapshot, peer_timeout=None)
    except FrozenSetMismatchError as error:
        raise AssertionError(str(error)) from None
