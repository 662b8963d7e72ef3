"""Issue #22: nemo-automodel's own code judges every committed snapshot.

The committed snapshots (``snapshots/``) describe the transformers classes under transformers
5.24.0, the main environment. For each bundled recipe, its `peft` and `freeze_config` go through
the framework's ``PeftConfig`` / ``apply_lora_to_linear_modules``, ``parse_freeze_config`` and
``_apply_trainability_policy`` (``tests/framework/oracle.py``) on the model built on meta, and the
frozen names must be the snapshot's, name by name:

- a recipe in the framework's vocabulary (legacy 0.7-valid, selectors, none) with its own sections;
- a new-vocabulary recipe with its pre-migration twin's (``tests/migrate/fixtures/pre_migration``),
  when 0.7 accepts the twin; the twins only 0.6 accepted (`freeze_embeddings`, ...) are judged in
  the framework environment instead, through the integration
  (``tests/nemo/test_corpus_through_framework.py``), since 0.7 cannot read them.

Not marked `framework`: it needs the main environment's transformers, which the snapshots name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from mmfreeze.freeze.keys import detect_vocabulary, strict_problems
from mmfreeze.snapshots.compress import expand_lines
from mmfreeze.snapshots.format import parse_snapshot
from mmfreeze.snapshots.layout import snapshot_path
from mmfreeze.versions import SNAPSHOT_TRANSFORMERS_VERSION, installed_version
from tests.conftest import EXAMPLE_CONFIGS, LEGACY_CORPUS, REPO_ROOT, recipes_under
from tests.nemo.framework_pipeline import fresh_model, read_recipe

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(installed_version("transformers") != SNAPSHOT_TRANSFORMERS_VERSION,
                       reason=f"the committed snapshots name transformers {SNAPSHOT_TRANSFORMERS_VERSION}"),
]

RECIPES = recipes_under(EXAMPLE_CONFIGS)


@dataclass(frozen=True)
class Judged:
    """Which sections the framework ran for a recipe, or why it cannot judge it here."""

    sections_from: Path | None
    reason: str = ""


def judged_sections(recipe: Path) -> Judged:
    section = read_recipe(recipe).document.get("freeze_config")
    if detect_vocabulary(section) != "new":
        return Judged(recipe)
    twin = LEGACY_CORPUS / recipe.relative_to(EXAMPLE_CONFIGS)
    twin_section = read_recipe(twin).document.get("freeze_config")
    if problems := strict_problems(twin_section):
        return Judged(None, f"0.7 rejects its pre-migration twin ({'; '.join(problems)})")
    return Judged(twin)


def judge(recipe: Path, snapshot: Path) -> list[str]:
    """What differs between the framework's frozen set for ``recipe`` and ``snapshot``."""
    from tests.framework.oracle import framework_trainability

    judged = judged_sections(recipe)
    assert judged.sections_from is not None, judged.reason
    document = read_recipe(judged.sections_from).document
    frozen, _ = framework_trainability(fresh_model(recipe, "transformers"), document.get("freeze_config"),
                                       document.get("peft"))
    stored = parse_snapshot(snapshot.read_text(), source=str(snapshot)).frozen
    label = recipe.relative_to(REPO_ROOT).as_posix()
    return ([f"{label}: frozen by the framework, trainable in {snapshot.name}: {name}" for name in sorted(frozen - stored)]
            + [f"{label}: trainable under the framework, frozen in {snapshot.name}: {name}" for name in sorted(stored - frozen)])


def committed_snapshot(recipe: Path) -> Path:
    return snapshot_path(recipe, REPO_ROOT, REPO_ROOT / "snapshots")


JUDGEABLE = [recipe for recipe in RECIPES if judged_sections(recipe).sections_from is not None]


@pytest.mark.parametrize("recipe", JUDGEABLE, ids=lambda p: p.relative_to(EXAMPLE_CONFIGS).as_posix())
def test_the_framework_freezes_what_the_committed_snapshot_says(recipe: Path) -> None:
    problems = judge(recipe, committed_snapshot(recipe))
    assert not problems, "\n".join(problems[:10])


def test_the_judged_share_of_the_corpus() -> None:
    """Every recipe is either judged here or through the integration, for a stated reason."""
    reasons = {judged_sections(recipe).reason for recipe in RECIPES} - {""}
    assert len(JUDGEABLE) >= 50
    assert all(reason.startswith("0.7 rejects its pre-migration twin") for reason in reasons)


def test_a_planted_wrong_snapshot_fails_naming_the_recipe(tmp_path: Path) -> None:
    """The first frozen line of a judged recipe's snapshot deleted: its names are reported as
    frozen by the framework and trainable in the planted file, with the recipe's path."""
    recipe = JUDGEABLE[0]
    text = committed_snapshot(recipe).read_text()
    removed = parse_snapshot(text, source="committed").lines[0]
    planted = tmp_path / "planted.frozen.txt"
    planted.write_text(text.replace(f"\n{removed}\n", "\n", 1))
    label = recipe.relative_to(REPO_ROOT).as_posix()
    assert judge(recipe, planted) == [f"{label}: frozen by the framework, trainable in planted.frozen.txt: {name}"
                                      for name in sorted(expand_lines([removed]))]
