"""A built model's checkpoint renames, judged by transformers' own loading code.

For every parameter, the checkpoint name mmfreeze records must load back, through the installed
transformers' ``get_model_conversion_mapping`` and ``rename_source_key`` (what ``from_pretrained``
runs), as the parameter's own name. The Omni thinkers are where 5.18 and 5.24 differ: 5.24 loads
1,345 (Qwen2.5-Omni) and 1,406 (Qwen3-Omni) checkpoint names into another name, 5.18 none.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from torch import nn

from mmfreeze.models.conversion import checkpoint_renames
from mmfreeze.models.loader import build_model
from mmfreeze.versions import installed_version
from tests.conftest import MAIN_TRANSFORMERS, REPO_ROOT

REGISTRY = REPO_ROOT / "mmfreeze" / "registry" / "configs"
MODELS = {
    "Qwen__Qwen2-VL-2B-Instruct": "AutoModelForImageTextToText",
    "llava-hf__llava-1.5-7b-hf": "AutoModelForImageTextToText",
    "Qwen__Qwen2.5-Omni-7B": "AutoModelForMultimodalLM",
    "Qwen__Qwen3-Omni-30B-A3B-Instruct": "AutoModelForMultimodalLM",
}
"""Registry model -> the Auto class its recipes build."""
OMNI_MOVED_IN_524 = {"Qwen__Qwen2.5-Omni-7B": 1345, "Qwen__Qwen3-Omni-30B-A3B-Instruct": 1406}
"""Checkpoint names 5.24 loads under a name of its own (``thinker.model.*``); 5.18 loads them as they are."""


@cache
def built(name: str) -> nn.Module:
    config = json.loads((REGISTRY / f"{name}.json").read_text())["config"]
    return build_model(config, MODELS[name], source=name)


def loaded_name(model: nn.Module, checkpoint: str) -> str:
    """What transformers' loading makes of a checkpoint name for this model."""
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import WeightRenaming, rename_source_key

    renamings = [t for t in get_model_conversion_mapping(model, add_legacy=False) if isinstance(t, WeightRenaming)]
    return rename_source_key(checkpoint, renamings, [])[0]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in OMNI_MOVED_IN_524 else n for n in MODELS])
def test_every_recorded_checkpoint_name_loads_back_as_the_parameters_own_name(name: str) -> None:
    model = built(name)
    renames = checkpoint_renames(model)
    names = [parameter for parameter, _ in model.named_parameters()]
    assert [loaded_name(model, renames.to_checkpoint(parameter)) for parameter in names] == names
    assert all(renames.to_model(renames.to_checkpoint(parameter)) == parameter for parameter in names)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OMNI_MOVED_IN_524))
def test_the_omni_thinkers_are_renamed_under_5_24_and_not_under_5_18(name: str) -> None:
    renames = checkpoint_renames(built(name))
    renamed = [p for p, _ in built(name).named_parameters() if renames.to_checkpoint(p) != p]
    moved_in_524 = OMNI_MOVED_IN_524[name]
    assert len(renamed) == (moved_in_524 if installed_version("transformers") == MAIN_TRANSFORMERS else 0)
    assert all(p.startswith("thinker.model.") for p in renamed)

