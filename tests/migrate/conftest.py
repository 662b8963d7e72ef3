"""Shared fixtures: the pre-migration corpus, migrated once per session (models built once)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mmfreeze.migrate.run import MigrateOptions, find_migratable, plan_files
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.targets import DEFAULT_TARGETS
from tests.conftest import legacy_rules

PRE_MIGRATION = Path(__file__).parent / "fixtures" / "pre_migration"


@pytest.fixture(scope="session")
def structure_cache() -> StructureCache:
    return StructureCache(None)


@pytest.fixture(scope="session")
def structure_of(structure_cache):
    return lambda request: load_structure(request, structure_cache).structure


@pytest.fixture(scope="session")
def corpus_copy(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("corpus") / "example_configs"
    shutil.copytree(PRE_MIGRATION, target)
    return target


@pytest.fixture(scope="session")
def preserve_run(corpus_copy, structure_of):
    files = find_migratable([corpus_copy])
    return files, plan_files(files, MigrateOptions(allowed_targets=DEFAULT_TARGETS, framework=legacy_rules()), structure_of)
