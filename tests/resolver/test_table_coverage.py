"""Every table entry, checked against the real class built on the meta device."""

from __future__ import annotations

import pytest

from mmfreeze.resolver import ARCHITECTURE_TABLE
from mmfreeze.resolver.coverage import candidate_classes, verify_candidate

CANDIDATES = {candidate.class_name: candidate for candidate in candidate_classes()}


def test_every_table_entry_is_a_multimodal_or_declared_text_only_class():
    assert sorted(set(ARCHITECTURE_TABLE) - set(CANDIDATES)) == []


@pytest.mark.parametrize("class_name", sorted(ARCHITECTURE_TABLE))
def test_table_entry_matches_the_real_module_tree(class_name):
    """Declared paths exist, roles and modalities are as declared, every parameter has one owner
    or a declared reason, and no heuristic warning is logged."""
    result = verify_candidate(CANDIDATES[class_name])
    assert result.problems == ()


def test_table_covers_at_least_100_multimodal_classes():
    assert sum(CANDIDATES[name].multimodal for name in ARCHITECTURE_TABLE) >= 100
