"""Every table entry, checked against the real class built on the meta device.

It runs under both transformers releases CI tests (the main environment's 5.24.0 and the framework
environment's 5.18.0, `.ci/framework_env`). Under the release the snapshots are made with, every
table class must exist; under another one, a class that release does not have yet is skipped.
"""

from __future__ import annotations

import pytest

from benchmarks.resolver_checks import TEXT_ONLY_CLASSES, candidate_classes, verify_candidate
from mmfreeze.resolver import ARCHITECTURE_TABLE
from mmfreeze.resolver.table_framework import TABLE as FRAMEWORK_ONLY
from mmfreeze.versions import installed_version
from tests.conftest import MAIN_TRANSFORMERS

CANDIDATES = {candidate.class_name: candidate for candidate in candidate_classes()}
TRANSFORMERS_VERSION = installed_version("transformers")
TRANSFORMERS_TABLE = sorted(set(ARCHITECTURE_TABLE) - set(FRAMEWORK_ONLY))
"""Entries of transformers classes; NeMo AutoModel's own classes are checked by
tests/framework/test_framework_classes.py, where the framework is installed."""


def test_every_table_entry_is_a_multimodal_or_declared_text_only_class():
    absent = sorted(set(TRANSFORMERS_TABLE) - set(CANDIDATES))
    if absent and TRANSFORMERS_VERSION != MAIN_TRANSFORMERS:
        pytest.skip(f"transformers {TRANSFORMERS_VERSION} does not have {len(absent)} table classes yet: {absent}")
    assert absent == []


@pytest.mark.parametrize("class_name", TRANSFORMERS_TABLE)
def test_table_entry_matches_the_real_module_tree(class_name):
    """Declared paths exist, roles and modalities are as declared, every parameter has one owner
    or a declared reason, and no heuristic warning is logged."""
    if class_name not in CANDIDATES and TRANSFORMERS_VERSION != MAIN_TRANSFORMERS:
        pytest.skip(f"transformers {TRANSFORMERS_VERSION} has no {class_name}")
    result = verify_candidate(CANDIDATES[class_name])
    assert result.problems == ()


def test_table_covers_at_least_100_multimodal_classes():
    assert sum(name not in TEXT_ONLY_CLASSES for name in TRANSFORMERS_TABLE) >= 100
