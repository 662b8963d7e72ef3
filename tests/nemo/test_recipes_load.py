"""Every bundled recipe is read by nemo-automodel 0.7.0's own loader, which imports each `_target_`.

``load_yaml_config`` (``components/config/loader.py``) is the first thing a run does with a recipe:
it resolves every ``${...}`` from the environment and imports every ``_target_`` (dataset
builders, processors, losses, optimizers). A recipe naming a builder 0.7.0 does not ship fails
there, before any model is built. The environment variables the corpus reads (checkpoint roots,
caches) are set as a training machine sets them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_CONFIGS, recipes_under
from tests.nemo.framework_env import requires_framework

pytestmark = [pytest.mark.framework, requires_framework]

TRAINING_ENVIRONMENT = {"HF_DATASETS_CACHE": "/data/hf/datasets", "HF_HOME": "/data/hf", "CHECKPOINT_ROOT": "/ckpt",
                        "SWEEP_DIR": "/sweeps"}
TEAM_BUILDERS = {
    "audio_finetune/qwen2_5_omni/qwen2_5_omni_7b_av_mix.yaml",
    "vlm_finetune/gemma4/gemma4_e2b_speech_vision_mix.yaml",
}
"""Recipes whose dataset interleaves speech and images: 0.7.0 ships no builder for such a mix
(its VLM ``make_meta_dataset`` reads images and videos, its audio builders audio alone), so a team
writes its own; these name it as ``nemo_automodel.components.datasets.mixture.InterleavedMixture``."""


def label(path: Path) -> str:
    return path.relative_to(EXAMPLE_CONFIGS).as_posix()


@pytest.mark.parametrize("recipe", recipes_under(EXAMPLE_CONFIGS), ids=label)
def test_the_frameworks_loader_reads_the_recipe_and_imports_every_target(
    recipe: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nemo_automodel.components.config.loader import load_yaml_config

    for name, value in TRAINING_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    if label(recipe) in TEAM_BUILDERS:
        with pytest.raises(ImportError, match="cannot resolve attribute 'mixture.InterleavedMixture'"):
            load_yaml_config(str(recipe))
        return
    assert load_yaml_config(str(recipe)).get("model") is not None


def test_every_builder_the_mix_table_names_is_one_the_framework_ships() -> None:
    from nemo_automodel.components.config.loader import _resolve_target

    from mmfreeze.reachability.mix import BUILDER_MIXES

    assert all(callable(_resolve_target(target)) for target in BUILDER_MIXES)
