"""Intent mode takes legacy input as preserve mode does (issue 48, item 5): on the public-corpus
shapes of the pre-migration fixtures, every file preserve mode migrates, intent mode migrates too,
under the fixtures' release (0.6) and under 0.7, whose rules reject `freeze_embeddings` (29 of
them carry it; it is dropped with a note, as `docs/migration.md` says)."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from mmfreeze.migrate.run import MigrateOptions, find_migratable, plan_files
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # every pre-migration file, twice per release

PRE_MIGRATION = REPO_ROOT / "tests" / "migrate" / "fixtures" / "pre_migration"


@pytest.mark.parametrize("release", ["0.6", "0.7"])
def test_intent_mode_migrates_every_file_preserve_mode_migrates(workspace_of, release: str) -> None:
    files = [path for path in find_migratable([PRE_MIGRATION]) if path.suffix == ".yaml" and path.name != "pyproject.toml"]
    results = {mode: plan_files(files, MigrateOptions(mode=mode), workspace_of(PRE_MIGRATION, framework=release))
               for mode in ("preserve", "intent")}
    migrated = {mode: {result.display for result in found if result.changed} for mode, found in results.items()}
    assert len(migrated["preserve"]) > 50
    skipped = {result.display: result.error for result in results["intent"] if result.status == "skipped"}
    assert migrated["preserve"] <= migrated["intent"], {name: skipped.get(name) for name in migrated["preserve"] - migrated["intent"]}
    with_embeddings = [result for result in results["intent"]
                       if "freeze_embeddings" in (YAML(typ="safe").load(result.old_text).get("freeze_config") or {})]
    assert len(with_embeddings) >= 20
    for result in with_embeddings:
        written = YAML(typ="safe").load(result.new_text)
        sections = [written.get("freeze_config") or {}, (written.get("mmfreeze") or {}).get("freeze_config") or {}]
        assert result.changed and not any("freeze_embeddings" in section for section in sections), result.display
