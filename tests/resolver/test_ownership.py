from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mmfreeze.resolver.canonical import CanonicalParameter
from mmfreeze.resolver.ownership import assign_owners
from mmfreeze.resolver.paths import is_under

# Few segment values, so generated names and owner paths often nest and share prefixes;
# "a-b" sorts just before "a.b", the boundary a prefix search can get wrong.
SEGMENT = st.sampled_from(["a", "b", "a-b", "0", "1", "layers"])
PATH = st.lists(SEGMENT, min_size=1, max_size=4).map(".".join)


def spec_owner(param: CanonicalParameter, owners: list[str]) -> str | None:
    """The rule as the module docstring states it: the deepest owner containing any name, ties to
    the first declared, the root last."""
    ranked = sorted(owners, key=lambda path: -path.count(".") if path else 1)
    return next((path for path in ranked if any(is_under(name, path) for name in param.names)), None)


@settings(max_examples=400)
@example(names=[["a-b"], ["a.b"]], owners=["a"])
@given(
    names=st.lists(st.lists(PATH, min_size=1, max_size=3, unique=True), max_size=12),
    owners=st.lists(st.one_of(st.just(""), PATH), max_size=5),
)
def test_owner_is_the_deepest_containing_path_of_any_name(names: list[list[str]], owners: list[str]) -> None:
    seen: set[str] = set()
    params = []
    for group in names:
        group = [name for name in group if name not in seen]
        seen.update(group)
        if group:
            params.append(CanonicalParameter(name=group[0], aliases=tuple(group[1:]), raw_name=group[0], numel=1))
    assert assign_owners(params, owners) == {param.name: spec_owner(param, owners) for param in params}
