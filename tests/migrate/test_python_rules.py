"""MF101/MF102 and their registry: a call is rewritten only when bound to models and proven on each
(models built on the meta device from the bundled registry); everything else is kept and reported
with its line. Every case also runs twice: the second run changes nothing."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

import pytest

from mmfreeze.migrate.python.prove import BoundModels
from mmfreeze.migrate.python.registry import PYTHON_RULES
from mmfreeze.migrate.python_file import migrate_python
from mmfreeze.migrate.rules import RULES
from mmfreeze.boundary.releases import RELEASES

IMPORT = "from nemo_automodel.components.training.utils import apply_parameter_freezing\n"
NEW_IMPORT = "from mmfreeze.freeze import apply_freeze_config\n"
QWEN = "# mmfreeze: models=Qwen/Qwen2-VL-2B-Instruct\n"
LLAVA = "# mmfreeze: models=llava-hf/llava-1.5-7b-hf\n"


@pytest.fixture(scope="module")
def run(workspace_of):
    models = {release: BoundModels(workspace_of(Path(__file__).parent, framework=release)) for release in RELEASES}

    def migrate(source: str, disabled=(), release="0.7"):
        def once(text: str):
            return migrate_python(text, display="f.py", disabled=disabled, directory=Path(__file__).parent,
                                  models=models[release])
        result = once(textwrap.dedent(source))
        assert once(result.new_text).new_text == result.new_text  # no-op twice
        return result
    return migrate


def test_an_unbound_call_is_kept_and_says_how_to_bind_it(run):
    source = IMPORT + "apply_parameter_freezing(m, {})\n"
    result = run(source)
    assert result.new_text == source and result.status == "unchanged"
    [finding] = result.findings
    assert (finding.line, finding.rule) == (2, "MF101") and "# mmfreeze: models=<model id>" in finding.message


def test_a_bound_empty_dict_is_proven_and_replaces_the_import(run):
    result = run(IMPORT + QWEN + "apply_parameter_freezing(m, {})\n")
    assert result.new_text == NEW_IMPORT + QWEN + (
        'apply_freeze_config(m, {"vision": {"tower": True, "projector": True}, "language_model": False})\n')
    assert result.rules == ("MF101",) and not result.findings
    assert any("proven on Qwen/Qwen2-VL-2B-Instruct" in note for note in result.notes)


def test_a_trailing_pragma_binds_a_keyword_dict_and_single_quotes_stay(run):
    result = run(IMPORT + "apply_parameter_freezing(m, freeze_config={'freeze_modules': [{'path': 'model.visual'}], "
                 "'unfreeze_modules': [{'path': 'model.visual.merger'}]})  " + QWEN)
    assert "freeze_config={'vision': {'tower': True, 'projector': False}, 'language_model': False})" in result.new_text


MULTILINE_06 = IMPORT + textwrap.dedent("""\
    def f(m):
        # mmfreeze: models=llava-hf/llava-1.5-7b-hf
        apply_parameter_freezing(
            m,
            freeze_config={
                "freeze_vision_tower": True,
                # stage 1
                "freeze_language_model": True,
                "freeze_embeddings": True,  # never read
            },
        )
    """)


def test_a_call_with_a_key_only_0_6_accepted_migrates_in_a_0_7_repository_as_in_a_0_6_one(run):
    """`freeze_embeddings` is what migrate exists to remove (0.7 rejects it, 0.6 ignored it): the
    call means what the code that trained with it did, in either repository (issue 39 item 4)."""
    in_07 = run(MULTILINE_06)
    assert in_07.new_text != MULTILINE_06 and not in_07.findings
    assert in_07.new_text == run(MULTILINE_06, release="0.6").new_text


def test_a_multiline_dict_keeps_its_layout_and_comments(run):
    result = run(MULTILINE_06, release="0.6")
    assert (
        '        freeze_config={\n'
        '            # (was on freeze_embeddings) never read\n'
        '            "vision": {"tower": True, "projector": False},\n'
        '            # stage 1\n'
        '            "language_model": False,\n'
        '            "modules": ["model.language_model"],\n'
        '        },\n'
    ) in result.new_text


def test_a_bound_parametrize_list_has_every_dict_proven(run):
    result = run("import pytest\n" + IMPORT + textwrap.dedent("""\
        @pytest.mark.parametrize("cfg", [{}, {"freeze_modules": [{"glob": "model.language_model.layers.1[0-5]"}]}])
        def test_x(m, cfg):
            # mmfreeze: models=llava-hf/llava-1.5-7b-hf
            apply_parameter_freezing(m, cfg)
        """))
    assert ('[{"vision": {"tower": True, "projector": False}, "language_model": False}, {"vision": {"tower": False, '
            '"projector": False}, "language_model": False, "modules": [{"layers": "language_model", "from": 10, "to": 15}]}]'
            ) in result.new_text
    assert "apply_freeze_config(m, cfg)" in result.new_text


def test_models_needing_different_dicts_keep_the_call_and_say_what_each_needs(run):
    result = run(IMPORT + "# mmfreeze: models=Qwen/Qwen2-VL-2B-Instruct,llava-hf/llava-1.5-7b-hf\n"
                 "apply_parameter_freezing(m, {'freeze_vision_tower': True})\n")
    assert result.rules == ()
    [finding] = result.findings
    assert "no single new-vocabulary dict freezes the same on every bound model" in finding.message
    assert "llava-hf/llava-1.5-7b-hf needs {'vision': {'tower': True, 'projector': False}" in finding.message


def test_a_section_the_framework_rejects_on_a_bound_model_is_not_rewritten(run):
    result = run(IMPORT + LLAVA + "apply_parameter_freezing(m, {'freeze_modules': [{'path': 'model.visual'}]})\n")
    [finding] = result.findings
    assert "not proven on the bound models: on llava-hf/llava-1.5-7b-hf" in finding.message
    assert "`path: model.visual` matches no module of this model" in finding.message


def test_a_misspelt_key_is_an_input_error_with_a_did_you_mean(run):
    result = run(IMPORT + QWEN + "apply_parameter_freezing(m, {'freeze_vison_tower': False})\n")
    [finding] = result.findings
    assert "freeze_config.freeze_vison_tower: unknown key (did you mean 'freeze_vision_tower'?)" in finding.message


def test_an_unreadable_pragma_is_reported_with_a_did_you_mean(run):
    result = run(IMPORT + "# mmfreeze: model=Qwen/Qwen2-VL-2B-Instruct\napply_parameter_freezing(m, {})\n")
    [finding] = result.findings
    assert "line 2: cannot read the pragma part 'model=Qwen/Qwen2-VL-2B-Instruct' (did you mean 'models'?)" in finding.message


def test_a_recipe_binding_is_relative_to_the_file(run):
    recipe = "fixtures/selectors/llava_1_5_7b_lm_first20.yaml"
    result = run(IMPORT + f"# mmfreeze: recipes={recipe}\napply_parameter_freezing(m, {{'freeze_modules': "
                 "[{'glob': 'model.language_model.layers.[0-9]'}, {'glob': 'model.language_model.layers.1[0-9]'}]})\n")
    assert "'modules': [{'layers': 'language_model', 'first': 20}]" in result.new_text


def test_variables_and_computed_dicts_are_reported_and_keep_the_old_import(run):
    source = IMPORT + QWEN + "apply_parameter_freezing(m, CFG)\napply_parameter_freezing(m, {'freeze_audio_tower': not x})\n"
    result = run(source)
    assert result.new_text == textwrap.dedent(source)
    assert [(f.line, f.rule) for f in result.findings] == [(3, "MF101"), (4, "MF101")]


def test_one_call_rewritten_one_kept_keeps_both_imports(run):
    result = run(IMPORT + QWEN + "apply_parameter_freezing(m, {})\napply_parameter_freezing(m, CFG)\n")
    assert result.new_text.startswith(IMPORT + NEW_IMPORT) and "apply_parameter_freezing(m, CFG)" in result.new_text


def test_mf102_reports_freeze_config_elsewhere_and_legacy_reads_and_rewrites_nothing(run):
    source = textwrap.dedent("""\
        model = Auto.from_pretrained(p, freeze_config={"freeze_vision_tower": True})
        sec = cfg.get("freeze_config", {})
        if cfg["freeze_config"]["freeze_vision_tower"] or sec.get("freeze_audio_tower"):
            pass
        other(freeze_config=cfg)
        done(freeze_config={"vision": {"tower": True}})
        apply_freeze_config(m, freeze_config=CFG)
        """)
    result = run(source)
    assert result.new_text == source
    assert [(f.line, f.rule) for f in result.findings] == [(1, "MF102"), (3, "MF102"), (3, "MF102"), (5, "MF102")]
    assert "passed to Auto.from_pretrained, which reads it with its own parser" in result.findings[0].message


def test_mf102_reports_only_reads_of_a_freeze_config_section(run):
    source = textwrap.dedent("""\
        embeddings = recipe_cfg.get("freeze_embeddings")
        flags = {"freeze_audio_tower": True}["freeze_audio_tower"]
        section = cfg.freeze_config
        tower = section["freeze_vision_tower"] or cfg.freeze_config.get("unfreeze_modules")
        """)
    result = run(source)
    assert [(f.line, f.rule) for f in result.findings] == [(4, "MF102"), (4, "MF102")]


def test_disabled_rules_do_nothing(run):
    source = IMPORT + QWEN + "apply_parameter_freezing(m, {})\n"
    assert run(source, disabled={"MF101"}).new_text == textwrap.dedent(source)


def test_a_file_that_does_not_parse_is_reported_with_its_line():
    result = migrate_python("x = 1\ndef f(:\n  freeze_config = {}\n", display="bad.py", disabled=())
    assert result.status == "skipped" and result.error.startswith(f"bad.py:{3}: Python does not parse")  # libcst's line


def test_the_registry_runs_the_python_rules_in_their_documented_order():
    assert [rule for rule, _ in PYTHON_RULES] == [rule for rule in RULES if rule.id.startswith("MF1")]


@pytest.mark.parametrize("rule", [rule for rule, _ in PYTHON_RULES], ids=lambda rule: rule.id)
def test_every_python_rule_documents_its_before_and_after(rule):
    module = next(importlib.import_module(find.__module__) for r, find in PYTHON_RULES if r == rule)
    assert module.RULE == rule and rule.id in module.__doc__ and rule.name in module.__doc__
    assert "Before::" in module.__doc__ and "After" in module.__doc__


NO_OP_CASES = {
    "MF101": IMPORT + QWEN + "apply_parameter_freezing(m, {'freeze_language_model': True})\n",
    "MF102": "model = Auto.from_pretrained(p, freeze_config={'freeze_vision_tower': True})\n",
}


@pytest.mark.parametrize("rule", [rule for rule, _ in PYTHON_RULES], ids=lambda rule: rule.id)
def test_every_python_rule_is_a_no_op_on_its_own_output(run, rule):
    others = {r.id for r, _ in PYTHON_RULES if r != rule}
    first = run(NO_OP_CASES[rule.id], disabled=others)
    assert first.rules == (rule.id,) or first.findings  # it acted: rewrote, or reported
    again = run(first.new_text, disabled=others)
    assert again.new_text == first.new_text and again.rules == ()
