"""Issue #22: nemo-automodel's own code judges every committed snapshot.

The committed snapshots (``snapshots/``) describe the framework's own classes under its pin,
transformers 5.18.0, where the bundled recipes train. For each bundled recipe, its `peft` and `freeze_config` go through
the framework's ``PeftConfig`` / ``apply_lora_to_linear_modules``, ``parse_freeze_config`` and
``_apply_trainability_policy`` (``tests/framework/oracle.py``) on the model built on meta, and the
frozen names and the LoRA adapter names must be the snapshot's, name by name:

- a recipe in the framework's vocabulary (legacy 0.7-valid, selectors, none) with its own sections;
- a new-vocabulary recipe with its pre-migration twin's (``tests/migrate/fixtures/pre_migration``),
  when 0.7 accepts the twin; the twins only 0.6 accepted (`freeze_embeddings`, ...) are judged in
  the framework environment instead, through the integration
  (``tests/nemo/test_corpus_through_framework.py``), since 0.7 cannot read them.

Marked `framework`: it runs in `.ci/framework_env`, whose transformers and builder the snapshots name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from mmfreeze.freeze.keys import detect_vocabulary, strict_problems
from mmfreeze.models.lora import ADAPTER_MARK
from mmfreeze.snapshots.compress import expand_lines
from mmfreeze.snapshots.format import parse_snapshot
from mmfreeze.snapshots.layout import snapshot_path
from tests.conftest import EXAMPLE_CONFIGS, LEGACY_CORPUS, REPO_ROOT, recipes_under
from tests.nemo.framework_env import requires_framework
from tests.nemo.framework_pipeline import fresh_model, read_recipe

pytestmark = [pytest.mark.slow, pytest.mark.framework, requires_framework]

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
    frozen, trainable = framework_trainability(fresh_model(recipe, "auto"), document.get("freeze_config"),
                                               document.get("peft"), read_recipe(recipe).model.drafter)
    parsed = parse_snapshot(snapshot.read_text(), source=str(snapshot))
    stored, adapters = parsed.frozen, frozenset(name for name in frozen | trainable if ADAPTER_MARK in name)
    label = recipe.relative_to(REPO_ROOT).as_posix()
    return ([f"{label}: frozen by the framework, trainable in {snapshot.name}: {name}" for name in sorted(frozen - stored)]
            + [f"{label}: trainable under the framework, frozen in {snapshot.name}: {name}" for name in sorted(stored - frozen)]
            + [f"{label}: an adapter under the framework, not in {snapshot.name}: {name}"
               for name in sorted(adapters - parsed.adapters)]
            + [f"{label}: no adapter under the framework, an adapter in {snapshot.name}: {name}"
               for name in sorted(parsed.adapters - adapters)])


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


@pytest.mark.parametrize(("section", "says"), [
    ("lines", "frozen by the framework, trainable in"),
    ("adapter_lines", "an adapter under the framework, not in"),
], ids=["frozen-names", "adapter-names"])
def test_a_planted_snapshot_missing_one_line_fails_naming_the_recipe_and_that_lines_names(
    tmp_path: Path, section: str, says: str
) -> None:
    """The first line of a judged LoRA recipe's frozen names, or of its adapter names, deleted:
    the line's names are reported with the recipe's path, as the section they left says."""
    recipe = next(recipe for recipe in JUDGEABLE if "peft" in read_recipe(recipe).document)
    text = committed_snapshot(recipe).read_text()
    removed = getattr(parse_snapshot(text, source="committed"), section)[0]
    planted = tmp_path / "planted.frozen.txt"
    planted.write_text(text.replace(f"\n{removed}\n", "\n", 1))
    label = recipe.relative_to(REPO_ROOT).as_posix()
    assert judge(recipe, planted) == [f"{label}: {says} planted.frozen.txt: {name}" for name in sorted(expand_lines([removed]))]
