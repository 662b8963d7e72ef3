"""Issue 26, item 4: MF005 rewrites regex `param_group_overrides` patterns as `(modality, role)`
selectors only when every tensor keeps its group, and keeps (and reports) the others.

The small cases run on a tiny real Qwen2-VL (2 language-model layers, 1 ViT block). The bundled
recipes' originals (``fixtures/rates/``, the framework's regex patterns) migrate into the shipped
recipes, which give the same snapshot rates; `tests/nemo/test_rates_through_framework.py` trains
both through nemo-automodel's own optimizer builder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.cli.main import cli
from mmfreeze.exceptions import MigrationError
from mmfreeze.freeze.optimizer import parse_optimizer
from mmfreeze.freeze.param_groups import assign_groups, select_rates
from mmfreeze.freeze.targets import FreezeTargets
from mmfreeze.migrate import rates as rate_rules
from mmfreeze.migrate.rates import RatePlan, RateRewrite, plan_rate_rewrites, rewritten_entries
from mmfreeze.migrate.rules import MF005
from mmfreeze.migrate.yaml.context import SectionPlan, YamlContext
from mmfreeze.models.structure import structure_of
from mmfreeze.resolver.bind import resolve_model_inventory
from tests.conftest import EXAMPLE_CONFIGS
from tests.migrate.test_yaml_rules import rewrite
from tests.resolver.conftest import tiny_qwen2_vl

ORIGINALS = Path(__file__).parent / "fixtures" / "rates"


@pytest.fixture(scope="module")
def targets() -> FreezeTargets:
    model = tiny_qwen2_vl()
    return FreezeTargets(structure=structure_of(model), inventory=resolve_model_inventory(model))


def planned(entries: list[dict], targets: FreezeTargets) -> dict[int, dict | str]:
    plan = plan_rate_rewrites(entries, targets, source="r.yaml")
    return {**{found.index: dict(found.selector) for found in plan.rewrites},
            **{found.index: found.reason for found in plan.kept}}


def test_each_pattern_becomes_the_first_selector_that_takes_exactly_its_tensors(targets: FreezeTargets) -> None:
    entries = [
        {"pattern": r"^model\.visual\.merger\.", "lr_mult": 10.0},
        {"pattern": r"^model\.visual\.", "lr_mult": 0.1},  # the tower: the merger went to the entry before
        {"pattern": r"mlp\.gate_proj\.weight$", "wd_mult": 0.0},
        {"pattern": r"layers\.1\.", "lr_mult": 0.5},  # layer 1 but its gate_proj, taken before
        {"pattern": r"layers\.0\.mlp\.up_proj", "lr_mult": 0.5},
        {"pattern": "lm_head", "lr_mult": 2.0},
        {"pattern": r"language_model\.", "lr_mult": 0.9},
    ]
    assert planned(entries, targets) == {
        0: {"role": "vision.projector"},
        1: {"role": "vision.tower"},
        2: {"glob": "model.language_model.layers.*.mlp.gate_proj"},
        3: {"layers": "language_model", "last": 1},
        4: {"path": "model.language_model.layers.0.mlp.up_proj"},
        5: {"path": "lm_head"},
        # embed_tokens, the rest of layer 0 and the final norm: the language model less what 2-4 took
        6: {"role": "language_model"},
    }


def test_a_pattern_no_selector_reproduces_is_kept_and_says_why(targets: FreezeTargets) -> None:
    assert planned([{"pattern": "norm", "wd_mult": 0.0}, {"pattern": "nothing_here", "lr_mult": 2.0}], targets) == {
        0: "it takes 9 tensors (model.language_model.layers.*.input_layernorm, "
           "model.language_model.layers.*.post_attention_layernorm, model.language_model.norm, ... (5 in all)), and "
           "no role, layer range, module path or glob selects exactly those",
        1: "it takes no tensor (it matches nothing, or earlier entries take all it matches)",
    }


def test_every_rewrite_puts_every_tensor_in_the_group_it_was_in(targets: FreezeTargets) -> None:
    entries = [{"pattern": r"^model\.visual\.merger\.", "lr_mult": 10.0}, {"pattern": r"visual", "lr_mult": 0.1},
               {"pattern": "norm", "wd_mult": 0.0}]
    plan = plan_rate_rewrites(entries, targets, source="r.yaml")
    names = [info.name for info in targets.structure.parameters]
    before = parse_optimizer({"optimizer": {"param_group_overrides": entries}})
    after = parse_optimizer({"optimizer": {"param_group_overrides": rewritten_entries(entries, plan)}})
    grouped = [assign_groups(names, names, section.overrides, select_rates(section, targets, source="r.yaml"))
               for section in (before, after)]
    assert [dict(found.selector) for found in plan.rewrites] == [{"role": "vision.projector"}, {"role": "vision.tower"}]
    assert {n: g.index for n, g in grouped[0].group_of.items()} == {n: g.index for n, g in grouped[1].group_of.items()}


def test_a_rewrite_that_would_move_a_tensor_is_refused_with_nothing_written(
    targets: FreezeTargets, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The proof is the last word: a candidate search that went wrong (here: made to offer the
    tower for the merger's pattern) is caught by re-grouping the rewritten list."""
    monkeypatch.setattr(rate_rules, "_selects", lambda selector, targets, source: frozenset(
        targets.role_names("vision", "projector")))
    monkeypatch.setattr(rate_rules, "_candidates", lambda takes, targets: iter([{"role": "vision.tower"}]))
    with pytest.raises(MigrationError, match=r"would move 19 tensors to another group .*nothing written"):
        plan_rate_rewrites([{"pattern": "merger", "lr_mult": 10.0}], targets, source="r.yaml")


RECIPE = """\
optimizer:
  _target_: torch.optim.AdamW
  param_group_overrides:
    - {pattern: '^model\\.visual\\.merger\\.', lr_mult: 10.0}   # the merger learns the layout
    - pattern: "visual"   # the ViT
      lr_mult: 0.1
    - {pattern: norm, wd_mult: 0.0}
"""


def test_the_rewrite_replaces_each_pattern_in_place_in_flow_and_block_entries() -> None:
    plan = RatePlan(rewrites=(RateRewrite(index=0, pattern="", selector={"role": "vision.projector"}),
                              RateRewrite(index=1, pattern="", selector={"layers": "vision.tower", "last": 4})))
    assert rewrite(RECIPE, YamlContext(source="r.yaml", plan=SectionPlan(rates=plan)), MF005) == RECIPE.replace(
        "{pattern: '^model\\.visual\\.merger\\.', lr_mult: 10.0}", "{role: vision.projector, lr_mult: 10.0}").replace(
        '- pattern: "visual"   # the ViT', "- layers: vision.tower\n      last: 4   # the ViT")


@pytest.mark.slow  # builds Qwen2.5-VL-7B, Qwen3-VL-30B-A3B and LLaVA-1.5-7B on meta
def test_migrate_rewrites_the_bundled_originals_into_the_shipped_recipes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    copies = [shutil.copy(original, tmp_path / original.name) for original in sorted(ORIGINALS.glob("*.yaml"))]
    # MF005 alone: the shipped recipes keep these selectors as their source under `mmfreeze:` (MF006
    # compiles them there in the framework's environment: tests/nemo/test_rates_through_framework.py).
    result = CliRunner().invoke(cli, ["migrate", "--disable", "MF006", *map(str, copies)])
    assert result.exit_code == 0, result.output
    assert "3 files: 3 preserved" in result.output
    assert "optimizer.param_group_overrides[0]: pattern '\\\\.mlp\\\\.gate\\\\.weight$' -> glob: " \
           "model.language_model.layers.*.mlp.gate" in result.output
    yaml = YAML(typ="safe", pure=True)
    for copy in map(Path, copies):
        shipped = load_recipe(next(EXAMPLE_CONFIGS.rglob(copy.name))).document  # its source in place
        migrated = yaml.load(copy.read_text())
        assert (migrated["optimizer"], migrated["freeze_config"]) == (shipped["optimizer"], shipped["freeze_config"])
        changed = [line for line in copy.read_text().splitlines() if line not in (ORIGINALS / copy.name).read_text()]
        assert changed and all(line.lstrip().startswith("- {") for line in changed), changed
