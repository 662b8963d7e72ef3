"""Every diff says what it costs per rank (issue 49 item 3): a bundled recipe whose projector is
unfrozen, migrated and checked in a repository that trains on 8 ranks. The cost is the memory
model's (``mmfreeze.memory``, exact against real FSDP2 runs in ``tests/nemo/test_memory_exact.py``),
before and after, on the model the check built; the committed snapshot stays behaviour-only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.memory.recipe import recipe_memory
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.recipe import load_recipe
from tests.cli.test_snapshot_faults import SETTINGS, run, said
from tests.conftest import EXAMPLE_CONFIGS, MMFREEZE, top_level_environment

pytestmark = pytest.mark.slow  # builds Qwen2.5-VL-7B on meta, migrates and checks it twice

RECIPE = EXAMPLE_CONFIGS / "vlm_finetune" / "qwen2_5_vl" / "qwen2_5_vl_7b_cord_v2.yaml"
FROZEN_PROJECTOR = "    vision: {tower: true, projector: true}\n"
TRAINED_PROJECTOR = "    vision: {tower: true, projector: false}\n"


def migrate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MMFREEZE, "migrate", *args], cwd=cwd, env={**top_level_environment(), "CI": "true"},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def unfrozen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository at 8 ranks whose recipe's projector was unfrozen (source edited, then migrated)
    after its snapshot was accepted."""
    root = tmp_path_factory.mktemp("cost") / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(SETTINGS + "world_size = 8\n")
    text = RECIPE.read_text()
    assert text.count(FROZEN_PROJECTOR) == 1, "the bundled recipe's source moved: update this test"
    (root / "recipes" / "a.yaml").write_text(text)
    assert run(root, "--update", "recipes").returncode == ExitCode.OK
    (root / "recipes" / "a.yaml").write_text(text.replace(FROZEN_PROJECTOR, TRAINED_PROJECTOR))
    migrated = migrate(root, "recipes")
    assert migrated.returncode == ExitCode.OK, said(migrated)
    return root


def expected_cost(root: Path) -> tuple[int, int]:
    """The merger's parameters and the bytes its training adds to the largest rank, from the memory
    model itself on the recipe before and after (the figure the report must carry, not a restatement)."""
    recipe = load_recipe(root / "recipes" / "a.yaml")
    structure = load_structure(model_request(recipe), StructureCache(None)).structure
    after = recipe_frozen_set(recipe, structure)
    merger = frozenset(info.name for info in after.structure.parameters if info.name.startswith("model.visual.merger."))
    before = recipe_memory(recipe, after, world_size=8, frozen_names=after.frozen | merger)
    now = recipe_memory(recipe, after, world_size=8)
    added = max((n.gradients + n.optimizer + n.parameters) - (b.gradients + b.optimizer + b.parameters)
                for b, n in zip(before.ranks, now.ranks, strict=True))
    numel = sum(info.numel for info in after.structure.parameters if info.name in merger)
    return numel, added


def test_the_markdown_report_leads_with_the_largest_cost_per_rank(unfrozen: Path) -> None:
    result = run(unfrozen, "--check", "--report", "markdown", "recipes")
    assert result.returncode == ExitCode.CHANGED, said(result)
    lines = result.stdout.splitlines()
    assert lines[0] == "### mmfreeze: frozen-parameter changes"
    assert lines[2].startswith("**Largest change per rank**: `recipes/a.yaml`: +44.6M trainable parameters: +"), lines[:4]
    assert lines[2].endswith(" per rank at 8 ranks (gradients + AdamW states; activations not counted)")
    assert "| `model.visual.merger (vision projector)` | 5 | 44,574,464 | +" in result.stdout  # the group's own cost


def test_the_text_and_json_reports_carry_the_memory_models_figure(unfrozen: Path) -> None:
    from mmfreeze.counts import readable_bytes

    numel, added = expected_cost(unfrozen)
    text = run(unfrozen, "--check", "recipes")
    assert text.returncode == ExitCode.CHANGED, said(text)
    assert (f"  cost: +44.6M trainable parameters: +{readable_bytes(added)} per rank at 8 ranks "
            "(gradients + AdamW states; activations not counted)") in text.stdout
    report = json.loads(run(unfrozen, "--check", "--report", "json", "recipes").stdout)
    [outcome] = report["recipes"]
    total = outcome["cost"]["total"]
    assert (total["trainable"], total["world_size"]) == (numel, 8)
    assert total["parameters"] + total["gradients"] + total["optimizer"] == added


def test_the_committed_snapshot_stays_behaviour_only(unfrozen: Path) -> None:
    updated = run(unfrozen, "--update", "recipes")
    assert updated.returncode == ExitCode.OK, said(updated)
    stored = (unfrozen / "snapshots" / "recipes" / "a.yaml.frozen.txt").read_text()
    assert "cost" not in stored and "MB" not in stored and "world_size" not in stored


PRE_MIGRATION = Path(__file__).parents[1] / "migrate" / "fixtures" / "pre_migration"


@pytest.mark.parametrize(("settings", "says"), [
    ("world_size = 8\n", "cost: +44.6M trainable parameters: +"),
    ("", "cost: not sized: no world size: set world_size under [tool.mmfreeze], or the recipe's distributed.dp_size"),
])
def test_migrate_diff_says_what_an_intent_rewrite_costs_or_why_it_cannot(tmp_path: Path, settings: str, says: str) -> None:
    """Intent mode unfreezes the merger 0.6's substring froze: the report under the diff says what that
    costs per rank, per recipe and per group; without a world size it says so, never a guessed figure."""
    root = tmp_path / "repo"
    (root / "recipes").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'{SETTINGS}framework = "0.6"\n{settings}')
    source = PRE_MIGRATION / "vlm_finetune" / "qwen2_5_vl" / "qwen2_5_vl_7b_cord_v2.yaml"
    (root / "recipes" / "a.yaml").write_text(source.read_text())
    result = migrate(root, "--mode", "intent", "--diff", "recipes")
    assert result.returncode == ExitCode.OK, said(result)
    assert result.stdout.startswith("--- a/recipes/a.yaml")
    lines = result.stderr.splitlines()
    assert "recipes/a.yaml: changed, would change" in lines
    assert any(line.startswith(f"  {says}") for line in lines), lines
    if settings:
        assert any(line.startswith("    model.visual.merger (vision projector): 5 tensors / 44.6M parameters; +")
                   and line.endswith(" per rank at 8 ranks") for line in lines), lines
