"""Every rewrite a reviewer would question says why, in the report and as a comment in the file
(issue 48 items 3 and 7), on the public-corpus shapes of the pre-migration copy."""

from __future__ import annotations

import pytest

from mmfreeze.migrate.section import EMBEDDINGS_NOTE

pytestmark = pytest.mark.slow  # reads the whole-corpus migration (tests/migrate/conftest.py: preserve_run)


def result_for(preserve_run, name: str):
    files, results = preserve_run
    return next(result for path, result in zip(files, results, strict=True) if path.name == name)


def section_lines(text: str) -> list[str]:
    """The lines of the written `freeze_config` block, its header first."""
    lines = text.splitlines()
    start = lines.index("freeze_config:")
    end = next((index for index in range(start + 1, len(lines)) if lines[index] and not lines[index].startswith(" ")),
               len(lines))
    return lines[start:end]


def test_a_flag_turned_false_says_why_above_its_key_and_in_the_report(preserve_run) -> None:
    # Phi-4-MM: 0.6's substring flags match none of its vision encoder or its language model
    result = result_for(preserve_run, "phi4_mm_librispeech.yaml")
    lines = section_lines(result.new_text)
    vision = next(note for note in result.notes if note.startswith("freeze_vision_tower: true (legacy default) "
                                                                    "written as vision: false: on this model the flag "
                                                                    "froze none of the "))
    language = next(note for note in result.notes if note.startswith("freeze_language_model: true written as "
                                                                      "language_model: false: on this model the flag "
                                                                      "froze none of the "))
    assert lines[lines.index("  vision: {projector: false, tower: false}") - 1] == f"  # {vision}"
    assert lines[lines.index("  language_model: false") - 1] == f"  # {language}"


def test_a_dropped_key_says_why_inside_the_section_and_its_own_comment_follows_not_above(preserve_run) -> None:
    result = result_for(preserve_run, "internvl3_1b_textvqa.yaml")
    lines = section_lines(result.new_text)
    assert EMBEDDINGS_NOTE in result.notes
    assert lines[1:3] == [f"  # {EMBEDDINGS_NOTE}",
                          "  # was on freeze_embeddings: NOTE: ignored by the trainer, embeddings do train"]
    before = result.new_text.split("\nfreeze_config:")[0].splitlines()
    assert not any("was on" in line for line in before)  # no stale comment left above the section
