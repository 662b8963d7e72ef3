"""Issue 39: a migrated 0.6-era corpus, proven on the framework's own classes.

The pre-migration corpus (``tests/migrate/fixtures/pre_migration``: recipes written for
nemo-automodel 0.6, whose ``pyproject.toml`` declares ``framework = "0.6"``, which the corpus
migration tests read through ``legacy_rules()``) is copied with that declaration and migrated as a
team moving to 0.7 migrates it, with this environment's builder (``auto``: the framework's own
classes, built on meta):

1. ``mmfreeze migrate`` under the declared 0.6 turns each legacy section into its ``(modality,
   role)`` source, proven by 0.6's rules. 0.6 has no module selectors, so MF006 compiles nothing
   in this run (its note says so).
2. The repository then declares 0.7 and ``mmfreeze migrate`` runs again: MF006 keeps each source
   under ``mmfreeze:`` and compiles it into 0.7's ``freeze_modules`` / ``unfreeze_modules``.

For every recipe step 1 reports ``preserved`` (and every ``needs-escape-hatch`` one, whose
``modules:`` entries must hold the same set), the framework's own LoRA injection,
``parse_freeze_config`` and ``_apply_trainability_policy`` (invariants included) on the migrated
file's compiled ``freeze_config`` leave trainable exactly what the original trained. The original
is measured in one of two ways:

- **by the framework**: the same framework functions on the original file, where 0.7 accepts its
  section and reads it as 0.6 did (mmfreeze computes the same set under both releases' rules);
- **by mmfreeze under 0.6**: mmfreeze's computation of the original under the declared release,
  on the same framework-built model, where 0.7 rejects the section (``freeze_embeddings``, which
  0.6 ignored) or reads it otherwise. 0.6 itself is not installed here, so this baseline is
  mmfreeze's reproduction of 0.6's rules, not 0.6's code. Where the framework does accept the
  original, that reproduction is checked against it too.

Every model is built once per test run (``framework_pipeline`` caches them) and copied per recipe.
Nothing of mmfreeze is installed into the framework while this runs.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmfreeze.cli.main import cli
from mmfreeze.freeze.recipe_model import model_request, recipe_frozen_set
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.framework import choose_builder
from mmfreeze.models.loader import load_structure
from mmfreeze.models.structure import structure_of
from mmfreeze.recipes.recipe import load_recipe
from mmfreeze.recipes.targets import DEFAULT_TARGETS
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from tests.conftest import LEGACY_CORPUS, REPO_ROOT, legacy_rules, run_cache
from tests.nemo.framework_env import requires_framework
from tests.nemo.framework_pipeline import Outcome, assert_stock_framework, built_model, framework_outcome

pytestmark = [
    pytest.mark.framework,
    requires_framework,
    pytest.mark.skipif(choose_builder("auto").kind != "framework",
                       reason="needs nemo-automodel with the transformers it requires (.venv-framework)"),
]

CHECKED = ("preserved", "needs-escape-hatch")
"""Step 1's statuses whose frozen set migrate promises to keep."""
DECLARED = 'framework = "0.6"'


def _migrate(root: Path, cache: Path) -> dict[str, dict]:
    """``mmfreeze migrate ROOT --report json``, as a user runs it; each file's report by its path
    relative to ``root`` (the pre-migration corpus's path of its original)."""
    result = CliRunner().invoke(cli, ["migrate", str(root), "--report", "json", "--cache-dir", str(cache)])
    assert result.exit_code in (0, 1), result.output
    files = json.loads(result.stdout)["files"]
    return {Path(entry["file"]).absolute().relative_to(root.absolute()).as_posix(): entry for entry in files}


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict], dict[str, dict]]:
    """The copy after both steps, and each step's report by file."""
    root = tmp_path_factory.mktemp("upgrade") / "repository"
    shutil.copytree(LEGACY_CORPUS, root)
    pyproject = root / "pyproject.toml"
    assert DECLARED in pyproject.read_text(), "the pre-migration corpus no longer declares nemo-automodel 0.6"
    cache = run_cache(tmp_path_factory)  # the models the rest of the run builds too
    first = _migrate(root, cache)
    pyproject.write_text(pyproject.read_text().replace(DECLARED, 'framework = "0.7"'))
    second = _migrate(root, cache)
    return root, first, second


def _read(path: Path, rules: FrameworkRules):
    return load_recipe(path, allowed_targets=DEFAULT_TARGETS, root=REPO_ROOT, framework=rules)


def mmfreeze_trainable(path: Path, rules: FrameworkRules) -> frozenset[str] | str:
    """What mmfreeze computes for ``path`` under ``rules`` on the framework-built model (every name,
    tied aliases included), or its error."""
    try:
        recipe = _read(path, rules)
        if recipe.model.drafter is not None:  # a composite: the product's structure of its parts as built
            from mmfreeze.disk_cache import default_cache_dir

            structure = load_structure(model_request(recipe, choose_builder("framework")),
                                       StructureCache(default_cache_dir())).structure
        else:
            structure = structure_of(built_model(path, "framework"))
        result = recipe_frozen_set(recipe, structure)
    except Exception as error:  # noqa: BLE001 - a release's rejection is an outcome here
        return f"{type(error).__name__}: {error}"
    return frozenset(name for info in result.structure.parameters if info.name not in result.frozen
                     for name in info.names)


def original_trainable(original: Path) -> tuple[str, frozenset[str], str]:
    """(how it was measured, the original's trainable set, a disagreement between mmfreeze's 0.6
    reproduction and the framework where the framework accepts the original)."""
    under_06 = mmfreeze_trainable(original, legacy_rules())
    assert not isinstance(under_06, str), f"{original}: mmfreeze cannot read the original under 0.6: {under_06}"
    framework = framework_outcome(original, "framework")
    if framework.error or mmfreeze_trainable(original, CURRENT_RULES) != under_06:
        return "mmfreeze under 0.6", under_06, ""
    disagreement = "" if framework.trainable == under_06 else (
        f"mmfreeze's 0.6 reproduction differs from the framework: "
        f"{sorted(framework.trainable ^ under_06)[:5]}")
    return "framework", framework.trainable, disagreement


def _differs(label: str, original: frozenset[str], migrated: Outcome) -> str:
    if migrated.error:
        return f"{label}: the framework rejects the migrated file: {migrated.error}"
    if migrated.trainable == original:
        return ""
    return (f"{label}: newly trainable {sorted(migrated.trainable - original)[:5]}; "
            f"newly frozen {sorted(original - migrated.trainable)[:5]}")


def test_step_one_migrates_under_0_6_and_compiles_nothing(upgraded) -> None:
    _, first, _ = upgraded
    yaml = {name: entry for name, entry in first.items() if name.endswith(".yaml")}
    assert "skipped" not in {entry["status"] for entry in yaml.values()}
    assert all("MF006" not in entry["rules"] for entry in yaml.values())
    assert any(entry["status"] == "preserved" for entry in yaml.values())


def test_every_preserved_recipe_trains_on_the_framework_what_its_original_trained(upgraded) -> None:
    root, first, second = upgraded
    assert_stock_framework()
    checked = sorted(name for name, entry in first.items() if name.endswith(".yaml") and entry["status"] in CHECKED)
    differences, disagreements, measured, compiled = [], [], Counter(), 0
    for name in checked:
        assert second[name]["error"] is None, (name, second[name]["error"])
        migrated_path = root / name
        compiled += "MF006" in second[name]["rules"]
        assert (LEGACY_CORPUS / name).is_file() and migrated_path != LEGACY_CORPUS / name, name
        how, original, disagreement = original_trainable(LEGACY_CORPUS / name)
        measured[how] += 1
        if disagreement:
            disagreements.append(f"{name}: {disagreement}")
        migrated = framework_outcome(migrated_path, "framework")
        if difference := _differs(name, original, migrated):
            differences.append(difference)
    statuses = Counter(entry["status"] for name, entry in first.items() if name.endswith(".yaml"))
    print(f"\nstep 1 (0.6 declared): {dict(sorted(statuses.items()))}; "
          f"step 2 (0.7 declared): {sum('MF006' in entry['rules'] for entry in second.values())} compiled by MF006")
    print(f"checked {len(checked)} recipes ({', '.join(f'{statuses[s]} {s}' for s in CHECKED)}); originals measured "
          f"{dict(measured)}; {compiled} compiled; {len(differences)} differ from their original; "
          f"{len(disagreements)} where mmfreeze's 0.6 reproduction differs from the framework")
    assert compiled == len(checked)
    assert differences == []
    assert disagreements == []
