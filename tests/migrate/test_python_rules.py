"""MF101/MF102 on the shapes the corpus has: rewritten where literal, reported (file:line) where not."""

from __future__ import annotations

import textwrap

from mmfreeze.migrate.python_file import migrate_python

IMPORT = "from nemo_automodel.components.training.utils import apply_parameter_freezing\n"
NEW_IMPORT = "from mmfreeze.freeze import apply_freeze_config\n"


def _run(source: str, disabled=()):
    result = migrate_python(textwrap.dedent(source), display="f.py", disabled=disabled)
    assert migrate_python(result.new_text, display="f.py", disabled=disabled).new_text == result.new_text  # no-op twice
    return result


def test_positional_empty_dict_writes_the_legacy_default_and_replaces_the_import():
    result = _run(IMPORT + "apply_parameter_freezing(m, {})\n")
    assert result.new_text == NEW_IMPORT + 'apply_freeze_config(m, {"vision": {"tower": True}, "language_model": False})\n'
    assert result.rules == ("MF101",) and not result.findings


def test_keyword_dict_with_video_embedder_and_single_quotes():
    result = _run(IMPORT + "apply_parameter_freezing(m, freeze_config={'freeze_video_embedder': True})\n")
    assert "freeze_config={'vision': {'tower': True}, 'language_model': False, 'modules': ['patch_generator.video_embedder']}" in result.new_text


def test_multiline_dict_keeps_layout_and_comments():
    result = _run(IMPORT + textwrap.dedent("""\
        def f(m):
            apply_parameter_freezing(
                m,
                freeze_config={
                    "freeze_vision_tower": True,
                    # stage 1
                    "freeze_language_model": True,
                    "freeze_embeddings": True,  # never read
                },
            )
        """))
    assert (
        '        freeze_config={\n'
        '            # (was on freeze_embeddings) never read\n'
        '            "vision": {"tower": True},\n'
        '            # stage 1\n'
        '            "language_model": True,\n'
        '        },\n'
    ) in result.new_text
    assert "freeze_embeddings removed (never read)" in result.notes


def test_parametrize_list_of_literal_dicts_is_rewritten():
    result = _run("import pytest\n" + IMPORT + textwrap.dedent("""\
        @pytest.mark.parametrize("cfg", [{}, {"freeze_audio_tower": True}])
        def test_x(m, cfg):
            apply_parameter_freezing(m, cfg)
        """))
    assert '[{"vision": {"tower": True}, "language_model": False}, {"vision": {"tower": True}, "audio": {"tower": True}, "language_model": False}]' in result.new_text
    assert "apply_freeze_config(m, cfg)" in result.new_text


def test_variables_and_computed_dicts_are_reported_not_rewritten_and_keep_the_old_import():
    source = IMPORT + "CFG = {'freeze_vision_tower': True}\napply_parameter_freezing(m, CFG)\napply_parameter_freezing(m, {'freeze_audio_tower': not x})\n"
    result = _run(source)
    assert result.new_text == textwrap.dedent(source)
    assert [(f.line, f.rule) for f in result.findings] == [(3, "MF101"), (4, "MF101")]


def test_one_call_rewritten_one_reported_keeps_both_imports():
    result = _run(IMPORT + "apply_parameter_freezing(m, {})\napply_parameter_freezing(m, CFG)\n")
    assert result.new_text.startswith(IMPORT + NEW_IMPORT) and "apply_parameter_freezing(m, CFG)" in result.new_text


def test_freeze_config_kwarg_elsewhere_and_subscript_reads():
    result = _run(textwrap.dedent("""\
        model = Auto.from_pretrained(p, freeze_config={"freeze_vision_tower": True, "freeze_language_model": False})
        if cfg["freeze_config"]["freeze_vision_tower"] or sec.get("freeze_audio_tower"):
            pass
        other(freeze_config=cfg)
        """))
    assert 'freeze_config={"vision": {"tower": True}, "language_model": False})' in result.new_text
    assert [(f.line, f.rule) for f in result.findings] == [(2, "MF102"), (2, "MF102"), (4, "MF102")]


def test_disabled_rules_do_nothing():
    source = IMPORT + "apply_parameter_freezing(m, {})\n"
    assert migrate_python(source, display="f.py", disabled={"MF101"}).new_text == source


def test_a_file_that_does_not_parse_is_reported_with_its_line():
    result = migrate_python("x = 1\ndef f(:\n  freeze_config = {}\n", display="bad.py", disabled=())
    assert result.status == "skipped" and result.error.startswith(f"bad.py:{3}: Python does not parse")  # libcst's line
