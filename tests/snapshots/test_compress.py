from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mmfreeze.snapshots.compress import compress_names, expand_lines

COMPONENT = st.one_of(
    st.integers(min_value=0, max_value=40).map(str),
    st.sampled_from(["model", "layers", "mlp", "weight", "0", "00", "01", "-1", "{0..3}", "a\\b", "x}", "٣"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=6),
)
NAMES = st.lists(COMPONENT, min_size=1, max_size=6).map(".".join)


@given(st.sets(NAMES, max_size=60))
def test_expanding_the_compressed_lines_gives_back_exactly_the_names(names: set[str]) -> None:
    assert expand_lines(compress_names(names)) == names


@given(st.sets(NAMES, max_size=60))
def test_compression_is_deterministic_and_sorted(names: set[str]) -> None:
    lines = compress_names(names)
    assert lines == sorted(lines) == compress_names(sorted(names, reverse=True))


def test_repeated_layers_become_one_line_with_ranges() -> None:
    names = [f"model.language_model.layers.{i}.mlp.up_proj.weight" for i in range(34) if i != 7]
    assert compress_names([*names, "lm_head.weight"]) == [
        "lm_head.weight",
        "model.language_model.layers.{0..6,8..33}.mlp.up_proj.weight",
    ]


def test_non_canonical_numbers_and_braces_stay_literal() -> None:
    assert compress_names(["a.01.w", "a.1.w", "x.{0..2}.w"]) == ["\\x.{0..2}.w", "a.01.w", "a.1.w"]
