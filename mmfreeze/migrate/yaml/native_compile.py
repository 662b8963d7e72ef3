"""MF006 native-compile: the `(modality, role)` source kept under `mmfreeze:`, the release's own sections beside it.

Before::

    # what MF001 writes, or a recipe already in the new vocabulary

    freeze_config:
      # ViT frozen, merger trained
      vision: {tower: true, projector: false}

After::

    # compiled and proven on Qwen2-VL as nemo-automodel 0.7.0 builds it
    mmfreeze:
      # the reviewed source: `mmfreeze migrate` compiles it into freeze_config (and the rates) below
      freeze_config:
        # ViT frozen, merger trained
        vision: {tower: true, projector: false}
      compiled_for: nemo-automodel 0.7, transformers 5.18.0, builder nemo-automodel 0.7.0
    # compiled from mmfreeze.freeze_config by `mmfreeze migrate`: edit the source, then run it again
    freeze_config:
      freeze_modules:
        - {path: model.visual}
      unfreeze_modules:
        - {path: model.visual.merger}

Under `peft:` the source says so (``PEFT_SOURCE_NOTE``): there, ``false`` leaves a base weight
to the PEFT baseline, which has frozen it. A compiled `freeze_config` with no selector says why it
is empty (``EMPTY_NOTES``): an empty section is not a mistake, it keeps 0.7's vision default off.

Rate selectors move the same way: the `optimizer.param_group_overrides` block goes under `mmfreeze:`
as it was, and the optimizer gets one pattern per entry. A recipe already compiled gets its compiled
sections and `compiled_for` written again, its source untouched. Runs last: it compiles what MF001
and MF005 wrote, and moves the blocks as they left them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from mmfreeze.exceptions import NotNativelyExpressible
from mmfreeze.freeze.compiler.target import release_of
from mmfreeze.freeze.keys import detect_vocabulary
from mmfreeze.freeze.compiler.recipe import compiled_hold, compiled_sections
from mmfreeze.migrate.rates import has_entries
from mmfreeze.migrate.rules import MF006
from mmfreeze.migrate.yaml.context import Planning, SectionPlan, YamlContext
from mmfreeze.migrate.yaml.edits import LineEdits
from mmfreeze.migrate.yaml.rule import YamlRule
from mmfreeze.migrate.yaml.text import (
    detect_indent, flow, indentation, key_position, key_span, line_ending, line_key, split_lines,
)
from mmfreeze.recipes.layout import (
    COMPILED_FOR, SECTION, SOURCE_FREEZE, SOURCE_RATES, CompiledSections, is_compiled_layout,
)
from mmfreeze.recipes.optimizer import OVERRIDES
from mmfreeze.recipes.optimizer import SECTION as OPTIMIZER
from mmfreeze.recipes.roundtrip import YamlFile

SOURCE_NOTE = "# the reviewed source: `mmfreeze migrate` compiles it into freeze_config (and the rates) below"
COMPILED_NOTE = "# compiled from mmfreeze.freeze_config by `mmfreeze migrate`: edit the source, then run it again"
PEFT_SOURCE_NOTE = "# peft: every base weight is frozen before freeze_config runs, so false leaves it frozen (by PEFT)"
EMPTY_NOTES = {
    True: "# empty: the PEFT baseline already freezes every base weight the source freezes",
    False: "# empty: the source freezes nothing; freeze_modules: [] keeps 0.7's default (the vision tower frozen) off",
}
"""Whether the recipe has `peft:` -> the comment an empty compiled section carries."""


class NativeCompile(YamlRule):
    rule = MF006

    def applies(self, planning: Planning, data: Mapping[str, Any]) -> bool:
        """A source in the new vocabulary (as the rules before leave it, or under `mmfreeze:`), or a
        0.7-selector section the new vocabulary cannot say (MF001 kept it) beside rate selectors, which
        0.7 cannot read: it is its own source, compiled for the rates alone."""
        section = data[SECTION][SOURCE_FREEZE] if is_compiled_layout(data) else data.get("freeze_config")
        vocabulary = detect_vocabulary(section, source=planning.where)
        return vocabulary == "new" or (vocabulary == "selectors" and has_entries(data, pattern=False))

    def plan(self, planning: Planning, data: Mapping[str, Any], plan: SectionPlan) -> SectionPlan:
        """The source compiled for the repository's release on the model its builder builds, proven
        there; nothing when the file already holds exactly that."""
        workspace = planning.workspace
        held = planning.recipe.compiled
        recipe = replace(planning.recipe, document={**planning.recipe.document, **{
            key: data[key] for key in ("freeze_config", OPTIMIZER) if key in data and held is None}})
        built = workspace.structure(workspace.request(recipe, probed=False))
        try:
            compiled = compiled_sections(recipe, built, target=workspace.compile_target(built))
        except NotNativelyExpressible as error:
            return replace(plan, not_compiled=f"{planning.where}: not compiled, it runs through mmfreeze's "
                                              f"integration: {error.message}")
        same_release = held is not None and release_of(held.compiled_for) == release_of(compiled.compiled_for)
        if held is not None and (held == compiled or (same_release and compiled_hold(recipe, built))):
            # what it holds (for this release, maybe on the framework's classes) trains the same here;
            # its notes alone may be out of date, and then it is written again as it is
            return plan if notes_current(workspace.documents.file(planning.path), held) else replace(plan, compiled=held)
        return replace(plan, compiled=compiled)

    def expect(self, data: dict[str, Any], plan: SectionPlan) -> None:
        """The source under `mmfreeze:` (where it is not yet), `compiled_for`, and the compiled sections."""
        compiled = plan.compiled
        if compiled is None:
            return
        settings = dict(data.get(SECTION) or {})
        if SOURCE_FREEZE not in settings:
            settings[SOURCE_FREEZE] = data["freeze_config"]
            if compiled.param_group_overrides is not None:
                settings[OVERRIDES] = data[OPTIMIZER][OVERRIDES]
        settings[COMPILED_FOR] = compiled.compiled_for
        data[SECTION] = settings
        data["freeze_config"] = compiled.freeze_config
        if compiled.param_group_overrides is not None:
            data[OPTIMIZER] = {**data[OPTIMIZER], OVERRIDES: compiled.param_group_overrides}

    def edit(self, context: YamlContext, edits: LineEdits) -> None:
        """The source under `mmfreeze:` and the compiled sections in the framework's places, placed by
        the original text's positions; the blocks earlier rules rewrote are read as they left them."""
        compiled = context.plan.compiled
        if compiled is None:
            return
        lines, document = list(edits.original), context.document
        pad, eol = " " * detect_indent(lines), line_ending(lines)
        settings = document.get(SECTION)
        has_source = hasattr(settings, "get") and SOURCE_FREEZE in settings
        peft = _has_peft(document)
        moved: list[str] = []
        if compiled.param_group_overrides is not None:
            line, column = document["optimizer"].lc.key(SOURCE_RATES)
            start, end = key_span(lines, line, column)
            if not has_source:
                moved = [_reindented(line_text, column, pad) for line_text in edits.current(start, end)]
            edits.replace(start, end, [f"{pad}{SOURCE_RATES}:{eol}",
                                       *(f"{pad * 2}- {flow(entry)}{eol}" for entry in compiled.param_group_overrides)])
        start, end = key_span(lines, key_position(document, "freeze_config")[0], 0)
        block = [f"{COMPILED_NOTE}{eol}", *_compiled_block(compiled.freeze_config, pad, eol, peft=peft)]
        if has_source:
            if start > 0 and lines[start - 1].rstrip("\r\n") == COMPILED_NOTE:
                start -= 1  # compiled before: the note goes with the block it stands on
            edits.replace(start, end, block)
            _set_compiled_for(context, edits, compiled.compiled_for, pad, eol)
            _set_peft_note(context, edits, peft, pad, eol)
            return
        current = edits.current(start, end)
        # MF001 leaves the comments of keys it removed above the block: they stay where they are
        head = next(index for index, text_line in enumerate(current) if line_key(text_line) == "freeze_config"
                    and indentation(text_line) == 0)
        kept, section = current[:head], current[head:]
        source = [f"{pad}{SOURCE_NOTE}{eol}", *([f"{pad}{PEFT_SOURCE_NOTE}{eol}"] if peft else []),
                  *(pad + text_line if text_line.strip() else text_line for text_line in section)]
        source[-1] = source[-1] if source[-1].endswith(("\n", "\r\n")) else source[-1] + eol
        additions = [*source, *moved, f"{pad}{COMPILED_FOR}: {compiled.compiled_for}{eol}"]
        if settings is None:
            edits.replace(start, end, [*kept, f"{SECTION}:{eol}", *additions, *block])
            return
        edits.replace(start, end, [*kept, *block])
        edits.insert(key_span(lines, key_position(document, SECTION)[0], 0)[1], additions)


def _compiled_block(section: dict, pad: str, eol: str, *, peft: bool) -> list[str]:
    out = [f"freeze_config:{eol}"]
    if not any(section.values()):
        out.append(f"{pad}{EMPTY_NOTES[peft]}{eol}")
    for key, entries in section.items():
        out.append(f"{pad}{key}:{' []' if not entries else ''}{eol}")
        out.extend(f"{pad * 2}- {flow(entry)}{eol}" for entry in entries)
    return out


def _reindented(line_text: str, column: int, pad: str) -> str:
    """A line of the optimizer's rates block, at the same depth under `mmfreeze:`."""
    if not line_text.strip():
        return line_text
    return pad + line_text[column:] if line_text[:column].strip() == "" else line_text


def _set_compiled_for(context: YamlContext, edits: LineEdits, compiled_for: str, pad: str, eol: str) -> None:
    """`mmfreeze.compiled_for` set to ``compiled_for`` (added when missing)."""
    settings = context.document[SECTION]
    written = [f"{pad}{COMPILED_FOR}: {compiled_for}{eol}"]
    if COMPILED_FOR in settings:
        line, _ = settings.lc.key(COMPILED_FOR)
        edits.replace(line, line + 1, written)
    else:
        edits.insert(key_span(list(edits.original), key_position(context.document, SECTION)[0], 0)[1], written)


def _set_peft_note(context: YamlContext, edits: LineEdits, peft: bool, pad: str, eol: str) -> None:
    """The source's PEFT note above `mmfreeze.freeze_config`: added under `peft:`, removed without it."""
    line = _source_line(context.document)
    noted = _peft_noted(edits.original, line)
    if peft and not noted:
        edits.insert(line, [f"{pad}{PEFT_SOURCE_NOTE}{eol}"])
    elif noted and not peft:
        edits.replace(line - 1, line, [])


def notes_current(file: YamlFile, held: CompiledSections) -> bool:
    """Whether a compiled file's notes say what they should: the source's PEFT note exactly under
    `peft:`, and the empty note on an empty compiled section. A file whose sections are up to date
    but whose notes are not is written again, its sections as they are."""
    lines, document = split_lines(file.text), file.tree
    peft = _has_peft(document)
    if _peft_noted(lines, _source_line(document)) != peft:
        return False
    compiled_line, _ = key_position(document, "freeze_config")
    noted = compiled_line + 1 < len(lines) and lines[compiled_line + 1].strip() == EMPTY_NOTES[peft]
    return noted == (not any(held.freeze_config.values()))


def _has_peft(document: Any) -> bool:
    return document.get("peft") is not None


def _source_line(document: Any) -> int:
    """The line of `mmfreeze.freeze_config` (0-based), which the PEFT note stands above."""
    return document[SECTION].lc.key(SOURCE_FREEZE)[0]


def _peft_noted(lines: Sequence[str], line: int) -> bool:
    return line > 0 and lines[line - 1].strip() == PEFT_SOURCE_NOTE
