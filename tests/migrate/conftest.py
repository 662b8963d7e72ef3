"""Shared fixtures: the pre-migration corpus, migrated once per session (models built once)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataclasses import replace

from mmfreeze.migrate.run import MigrateOptions, find_migratable, plan_files
from mmfreeze.models.cache import StructureCache
from mmfreeze.models.framework import BuilderChoice, choose_builder
from mmfreeze.models.loader import load_structure
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.settings import default_settings
from mmfreeze.workspace import Workspace
from tests.conftest import legacy_rules

PRE_MIGRATION = Path(__file__).parent / "fixtures" / "pre_migration"


@pytest.fixture(scope="session")
def structure_cache() -> StructureCache:
    return StructureCache(None)


@pytest.fixture(scope="session")
def structure_of(structure_cache):
    return lambda request: load_structure(request, structure_cache).structure


@pytest.fixture(scope="session")
def workspace_of(structure_cache):
    """A migration's run context on the repository ``root`` (default settings there, the release
    given), built by transformers unless ``builder`` says otherwise, sharing the session's structures."""
    def make(root: Path, *, framework: str | None = None, builder: BuilderChoice | None = None) -> Workspace:
        return Workspace(settings=replace(default_settings(root), framework=framework),
                         builder=builder or choose_builder("transformers"),
                         structures=structure_cache, documents=YamlDocuments(root, roundtrip=True))
    return make


@pytest.fixture(scope="session")
def corpus_copy(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("corpus") / "example_configs"
    shutil.copytree(PRE_MIGRATION, target)
    return target


@pytest.fixture(scope="session")
def preserve_run(corpus_copy, workspace_of):
    files = find_migratable([corpus_copy])
    return files, plan_files(files, MigrateOptions(), workspace_of(corpus_copy, framework=legacy_rules().release))
