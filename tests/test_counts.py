"""How every report prints tensors and parameters."""

from __future__ import annotations

import pytest

from mmfreeze.counts import count_text, readable_count, tensor_text


@pytest.mark.parametrize(("count", "text"), [
    (0, "0"), (2_048, "2,048"), (9_999, "9,999"), (12_345, "12.3K"), (999_499, "999K"), (999_999, "1M"),
    (1_505_280, "1.51M"), (67_895_296, "67.9M"), (3_340_000_000, "3.34B"), (10**9, "1B"), (2 * 10**12, "2T"),
])
def test_small_counts_are_exact_and_large_ones_have_three_digits(count: int, text: str) -> None:
    assert readable_count(count) == text


def test_one_tensor_is_singular() -> None:
    assert count_text(1, 2_048) == "1 tensor / 2,048 parameters"
    assert count_text(12, 3_340_000_000) == "12 tensors / 3.34B parameters"
    assert (tensor_text(1), tensor_text(1_240)) == ("1 tensor", "1,240 tensors")
