"""Bundled-recipe models on meta, built once per session; each test gets them with their flags restored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.guard.helpers import FINETUNE, LORA, REPO, RecipeModel, grad_flags, recipe_on_meta, reset_flags


@pytest.fixture(scope="session")
def _finetune_built() -> RecipeModel:
    return recipe_on_meta(FINETUNE)


@pytest.fixture(scope="session")
def _lora_built() -> RecipeModel:
    return recipe_on_meta(LORA)


def _restored(built: RecipeModel, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecipeModel]:
    monkeypatch.chdir(REPO)  # the default snapshot lookup is relative to the working directory
    flags = grad_flags(built.model)
    yield built
    reset_flags(built.model, flags)


@pytest.fixture
def finetune(_finetune_built: RecipeModel, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecipeModel]:
    """Qwen2.5-VL-7B on meta, vision tower frozen as its recipe says; cwd is the repository."""
    yield from _restored(_finetune_built, monkeypatch)


@pytest.fixture
def lora(_lora_built: RecipeModel, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecipeModel]:
    """Qwen2.5-VL-7B on meta with mmfreeze's live LoRA adapters, trained as its LoRA recipe says."""
    yield from _restored(_lora_built, monkeypatch)
