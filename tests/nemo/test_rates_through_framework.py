"""Issue 26, items 4-5, and issue 39: rates in the `(modality, role)` vocabulary, compiled by
`mmfreeze migrate`, run in the stock nemo-automodel 0.7.0 with its own optimizer builder, and the
guard holds them.

For each bundled recipe with `param_group_overrides`, its original (``tests/migrate/fixtures/rates/``,
the framework's regex patterns) is migrated here by `mmfreeze migrate` (MF005: selectors, the
source; MF006: compiled patterns beside it). Both run on the same meta-built model: trainability
through the framework's own pipeline, then the framework's typed recipe config,
``RecipeConfig(load_yaml_config(recipe)).optimizer``, builds the optimizer. Their param groups
(order, multipliers and tensors) are equal, the migrated file's with nothing installed. The
original needs ``install()`` only for a new-vocabulary `freeze_config`. The selector source, put
in the optimizer, the framework rejects.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from mmfreeze.cli.main import cli
from mmfreeze.exceptions import IntegrationError
from mmfreeze.freeze.keys import detect_vocabulary
from mmfreeze.guard import verify_frozen_set
from mmfreeze.snapshots.layout import DEFAULT_SNAPSHOT_DIR, snapshot_path
from tests.conftest import EXAMPLE_CONFIGS, REPO_ROOT
from tests.nemo.framework_env import requires_framework
from tests.nemo.framework_pipeline import framework_trained

pytestmark = [pytest.mark.framework, requires_framework]

ORIGINALS = sorted((REPO_ROOT / "tests" / "migrate" / "fixtures" / "rates").glob("*.yaml"))
Groups = list[tuple[float, float, tuple[str, ...]]]


@contextmanager
def integration(recipe: Path, *, installed: bool = True) -> Iterator[None]:
    from mmfreeze import nemo

    installation = nemo.install(recipe, guard=False) if installed else None
    try:
        yield
    finally:
        if installation is not None:
            installation.uninstall()


def build_optimizer(recipe: Path, model: Any, folder: Path) -> Any:
    """What a recipe run does: the framework's typed config of the recipe's `optimizer`, built on
    the model. The section is loaded on its own: most bundled recipes name dataset builders that
    0.7.0 does not ship (``make_cauldron_dataset``), and its loader imports every ``_target_``."""
    from nemo_automodel.components.config.loader import load_yaml_config
    from nemo_automodel.recipes._typed_config import RecipeConfig

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False  # PyYAML, the framework's loader, reads no ':' in a flow plain scalar
    section = folder / f"{recipe.stem}.optimizer.yaml"
    yaml.dump({"optimizer": yaml.load(recipe.read_text())["optimizer"]}, section)
    [optimizer] = RecipeConfig(load_yaml_config(str(section))).optimizer.build(model)
    return optimizer


def trained_groups(recipe: Path, folder: Path, *, installed: bool = True) -> tuple[Any, Any, Groups]:
    """The model, its optimizer, and the groups as (lr_mult, wd_mult, tensor names), in order."""
    with integration(recipe, installed=installed):
        model = framework_trained(recipe, "transformers")
        optimizer = build_optimizer(recipe, model, folder)
    name_of = {id(parameter): name for name, parameter in model.named_parameters()}
    groups = [(group.get("lr_mult", 1.0), group.get("wd_mult", 1.0), tuple(name_of[id(p)] for p in group["params"]))
              for group in optimizer.param_groups]
    return model, optimizer, groups


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The originals as `mmfreeze migrate` rewrites them in this environment."""
    folder = tmp_path_factory.mktemp("rates")
    (folder / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    copies = [Path(shutil.copy(original, folder / original.name)) for original in ORIGINALS]
    result = CliRunner().invoke(cli, ["migrate", *map(str, copies)])
    assert result.exit_code == 0, result.output
    return {copy.name: copy for copy in copies}


def shipped(name: str) -> Path:
    return next(EXAMPLE_CONFIGS.rglob(name))


@pytest.mark.parametrize("original", ORIGINALS, ids=lambda path: path.stem)
def test_a_migrated_regex_override_gives_the_frameworks_original_groups_on_the_stock_framework(
    original: Path, migrated: dict[str, Path], tmp_path: Path,
) -> None:
    """MF005 turns the regexes into selectors (the source, under `mmfreeze:`); MF006 compiles them
    back into patterns the stock framework groups exactly as it grouped the originals."""
    rewritten = migrated[original.name]
    document = YAML(typ="safe", pure=True).load(rewritten.read_text())
    sources = document["mmfreeze"]["param_group_overrides"]
    entries = document["optimizer"]["param_group_overrides"]
    assert sources and not any("pattern" in entry for entry in sources), sources
    assert all("pattern" in entry for entry in entries), entries
    bundled = YAML(typ="safe", pure=True).load(shipped(original.name).read_text())
    for section in ("mmfreeze", "freeze_config", "optimizer"):
        assert document[section] == bundled[section], section

    model, optimizer, on_stock_framework = trained_groups(rewritten, tmp_path, installed=False)
    _, _, framework_original = trained_groups(original, tmp_path)

    assert on_stock_framework == framework_original
    assert len(on_stock_framework) == len(entries) + 1  # the default group, then one per entry
    assert verify_frozen_set(model, shipped(original.name), optimizer=optimizer, snapshot=snapshot_path(
        shipped(original.name), REPO_ROOT, REPO_ROOT / DEFAULT_SNAPSHOT_DIR)).optimizer_checked
    if detect_vocabulary(YAML(typ="safe", pure=True).load(original.read_text()).get("freeze_config")) != "new":
        assert trained_groups(original, tmp_path, installed=False)[2] == framework_original


@pytest.mark.parametrize("original", ORIGINALS, ids=lambda path: path.stem)
def test_the_framework_rejects_the_selector_source_in_the_optimizer(original: Path, migrated: dict[str, Path]) -> None:
    """Why the selectors stay under `mmfreeze:`: in the optimizer the stock framework rejects them."""
    from nemo_automodel.components.optim.optimizer import _coerce_param_group_overrides

    entries = YAML(typ="safe", pure=True).load(migrated[original.name].read_text())["mmfreeze"]["param_group_overrides"]
    with pytest.raises(TypeError, match="ParamGroupOverride.__init__.. got an unexpected keyword argument"):
        _coerce_param_group_overrides(entries)


class PipelineStages:
    """Stand-in for the framework's ``AutoPipeline``: its optimizer build reads only ``parts``, and
    a real pipeline-parallel run needs several ranks of pipeline schedules this test cannot start."""

    def __init__(self, *parts: Any) -> None:
        self.parts = list(parts)


def test_selector_entries_refuse_a_pipeline_stage_and_a_dion_optimizer(tmp_path: Path) -> None:
    import torch
    from nemo_automodel.components.optim.optimizer import MuonConfig, OptimizerFromFactoryConfig

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: {}\noptimizer:\n  param_group_overrides:\n    - {role: vision.projector, lr_mult: 10.0}\n")
    entries = [{"role": "vision.projector", "lr_mult": 10.0}]
    with integration(recipe):
        factory = OptimizerFromFactoryConfig(factory=torch.optim.AdamW, kwargs={"param_group_overrides": entries})
        with pytest.raises(IntegrationError, match="resolved on the whole model, and this run builds one optimizer "
                                                   "per pipeline stage \\(2\\)"):
            factory.build(PipelineStages(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)))
        with pytest.raises(IntegrationError, match="MuonConfig does its own parameter grouping"):
            MuonConfig(param_group_overrides=entries).build(torch.nn.Linear(2, 2))
