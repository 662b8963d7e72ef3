"""Table entries whose module tree differs between the transformers releases CI tests.

The real paths of each release are recorded below, so a missing or mis-ordered alternative path
fails in either environment: every recorded tree is resolved with the table's alternatives (pure
data, whichever release is installed), and the installed release's record is checked against the
real classes built on the meta device, so the record cannot go stale. The test environment runs
5.25.0, the framework environment (`.ci/framework_env`) 5.18.0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from mmfreeze.resolver import ARCHITECTURE_TABLE
from benchmarks.resolver_checks import build_structure, candidate_classes
from mmfreeze.resolver.entry import ArchitectureEntry
from mmfreeze.resolver.resolve import resolve_structure
from mmfreeze.versions import installed_version
from tests.conftest import MAIN_TRANSFORMERS

Modules = frozenset[tuple[str, str, str]]  # (path, modality, role)
Language = Mapping[str, str]  # part -> path


def _record(modules: Iterable[tuple[str, str, str]], language: Language) -> tuple[Modules, Language]:
    return frozenset(modules), dict(language)


def _omni(thinker: tuple[Modules, Language], *generators: str) -> tuple[Modules, Language]:
    """A full Omni model's record: the thinker's under ``thinker.``, plus the speech generators."""
    modules, language = thinker
    return _record(
        [(f"thinker.{path}", modality, role) for path, modality, role in modules]
        + [(generator, "audio", "generator") for generator in generators],
        {part: f"thinker.{path}" for part, path in language.items()},
    )


def _thinker(model: str, visual_projectors: tuple[str, ...], audio_projectors: tuple[str, ...]):
    """An Omni thinker's record; ``model`` is where its towers live ("model." in 5.24, "" in 5.18)."""
    decoder = "model.language_model" if model else "model"
    return _record(
        [(f"{model}visual", "vision", "tower"), (f"{model}audio_tower", "audio", "tower")]
        + [(f"{model}visual.{name}", "vision", "projector") for name in visual_projectors]
        + [(f"{model}audio_tower.{name}", "audio", "projector") for name in audio_projectors],
        {"decoder": decoder, "embeddings": f"{decoder}.embed_tokens", "lm_head": "lm_head"},
    )


def _release(model: str) -> dict[str, tuple[Modules, Language]]:
    qwen2_5 = _thinker(model, ("merger",), ("proj",))
    qwen3 = _thinker(model, ("merger", "merger_list"), ("proj1", "proj2"))
    return {
        "Qwen2_5OmniThinkerForConditionalGeneration": qwen2_5,
        "Qwen2_5OmniForConditionalGeneration": _omni(qwen2_5, "talker", "token2wav"),
        "Qwen3OmniMoeThinkerForConditionalGeneration": qwen3,
        "Qwen3OmniMoeForConditionalGeneration": _omni(qwen3, "talker", "code2wav"),
    }


RELEASE_PATHS: Mapping[str, Mapping[str, tuple[Modules, Language]]] = {
    # 5.24 and 5.25 nest an Omni thinker's towers and text model under ``model``.
    "5.25.0": _release("model."),
    # 5.18 (nemo-automodel 0.7.0's pin) holds the towers on the thinker; ``model`` is the text model.
    "5.18.0": _release(""),
}
CASES = [(release, name) for release, classes in RELEASE_PATHS.items() for name in sorted(classes)]


def _tree(record: tuple[Modules, Language]) -> set[str]:
    """Every recorded path with all its ancestors (which exist in any real tree holding it)."""
    modules, language = record
    paths = {path for path, _, _ in modules} | set(language.values())
    return {".".join(path.split(".")[:end]) for path in paths for end in range(1, path.count(".") + 2)}


def _resolve_on(tree: set[str], entry: ArchitectureEntry) -> tuple[Modules, Language]:
    """What the table's alternatives pick on ``tree``: the first path that exists, as the resolver does."""
    modules = []
    for decl in entry.modules:
        found = next((path for path in decl.paths if path in tree), None)
        assert found is not None or not decl.required, f"none of {decl.paths} exists"
        if found is not None:
            modules.append((found, decl.modality, decl.role))
    language = {part.part: next((p for p in part.paths if p in tree), None) for part in entry.language_model}
    return frozenset(modules), language


def test_both_releases_ci_tests_are_recorded():
    assert set(RELEASE_PATHS) == {MAIN_TRANSFORMERS, "5.18.0"}


@pytest.mark.parametrize(("release", "class_name"), CASES)
def test_table_alternatives_resolve_each_recorded_release(release: str, class_name: str):
    """Runs under any transformers: a release's path missing from the alternatives, or listed
    after a path that also exists there, fails here."""
    record = RELEASE_PATHS[release][class_name]
    assert _resolve_on(_tree(record), ARCHITECTURE_TABLE[class_name]) == record


@pytest.mark.parametrize("class_name", sorted(RELEASE_PATHS[MAIN_TRANSFORMERS]))
def test_installed_release_matches_its_record(class_name: str):
    """The record of the installed release is the real module tree (skipped under a release with no record)."""
    release = installed_version("transformers")
    if release not in RELEASE_PATHS:
        pytest.skip(f"no recorded paths for transformers {release}")
    candidate = next(c for c in candidate_classes() if c.class_name == class_name)
    inventory = resolve_structure(build_structure(candidate))
    resolved = _record(
        ((m.spec.path, m.spec.modality, m.spec.role) for m in inventory.modules), inventory.language_model.parts
    )
    assert resolved == RELEASE_PATHS[release][class_name]
