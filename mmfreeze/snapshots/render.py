"""Reports of a snapshot run: plain text (terminal, pytest failures), Markdown (pull-request
comment), JSON (machines). Pure: results in, text out."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict

from mmfreeze.counts import tensor_text
from mmfreeze.distributed.native import NATIVE_VERDICTS
from mmfreeze.pr_comment import COMMENT_LIMIT, fit_comment
from mmfreeze.snapshots.compress import compress_names
from mmfreeze.resolver.labels import ModuleGroup, describe_total
from mmfreeze.snapshots.diff import RecipeChange, RenameGroup
from mmfreeze.snapshots.results import Orphan, RecipeOutcome

STATUS_TITLES = {
    "changed": "changed", "renamed": "renamed", "version_only": "version only", "updated": "accepted change", "missing": "missing snapshot",
    "written": "new snapshot written", "input_error": "input error", "passed": "unchanged",
}


UNMAPPED_TITLE = "stored names no tensor has now (not even through a rename)"


def stored_as(group: ModuleGroup, stored_names: Mapping[str, str]) -> list[str]:
    """The stored names of a group's renamed tensors, compressed (empty when none was renamed)."""
    return compress_names(stored_names[name] for name in group.names if name in stored_names)


def renamed_total(groups: Sequence[RenameGroup]) -> str:
    return tensor_text(sum(group.tensors for group in groups))


def _change_sections(change: RecipeChange) -> Iterator[tuple[str, str, Sequence[ModuleGroup]]]:
    """(text title, Markdown title, groups) of every kind of move a change lists, in report order."""
    yield "newly frozen", "Newly frozen", change.newly_frozen
    yield "newly trainable", "Newly trainable", change.newly_trainable
    yield "adapters added", "LoRA adapters added", change.adapters_added
    yield "adapters removed", "LoRA adapters removed", change.adapters_removed
    yield UNMAPPED_TITLE, UNMAPPED_TITLE.capitalize(), change.unmapped
    for rates in change.rate_changes:
        yield f"rate {rates.describe()}", f"Rate {rates.describe()}", rates.groups
    for reach in change.reach_changes:
        yield f"{reach.mix}: newly unreachable", f"{reach.mix}: newly unreachable (trainable, no gradient)", reach.newly_unreachable
        yield f"{reach.mix}: reached now", f"{reach.mix}: reached now", reach.newly_reached


def _text_groups(title: str, groups: Sequence[ModuleGroup], stored_names: Mapping[str, str]) -> Iterator[str]:
    if not groups:
        return
    yield f"  {title}: {describe_total(groups)}"
    for group in groups:
        yield f"    {group.label}: {group.describe()}"
        yield from (f"      {line}" for line in compress_names(group.names))
        if stored := stored_as(group, stored_names):
            yield "      stored as:"
            yield from (f"        {line}" for line in stored)


def _text_change(change: RecipeChange) -> Iterator[str]:
    for header in change.header_changes:
        yield f"  {header.field}: {header.old} -> {header.new}"
    for title, _, groups in _change_sections(change):
        yield from _text_groups(title, groups, change.stored_names)
    yield from (f"  {reach.mix} probe: {reach.probe}" for reach in change.reach_changes if reach.probe)
    if change.renamed:
        yield f"  renamed: {renamed_total(change.renamed)}"
        yield from (f"    {group.describe()}" for group in change.renamed)


def native_summary(outcomes: Sequence[RecipeOutcome]) -> str:
    """One line: how many recipes nemo-automodel 0.7 runs natively and how many need ``mmfreeze.nemo``."""
    verdicts = [outcome.nemo_automodel.verdict for outcome in outcomes if outcome.nemo_automodel]
    if not verdicts:
        return ""
    counts = ", ".join(f"{v} {verdicts.count(v)}" for v in NATIVE_VERDICTS if v in verdicts)
    return f"nemo-automodel 0.7: {counts} (mmfreeze train / mmfreeze.nemo.install())"


def render_text(outcomes: Sequence[RecipeOutcome], orphans: Sequence[Orphan]) -> str:
    """Every outcome but ``passed``, then orphans, then how the framework runs the recipes; the
    caller prints it without markup."""
    lines: list[str] = []
    for outcome in outcomes:
        if outcome.status == "passed":
            continue
        lines.append(f"{outcome.recipe}: {STATUS_TITLES[outcome.status]} ({outcome.snapshot})")
        if outcome.nemo_automodel:
            lines.append(f"  nemo-automodel 0.7: {outcome.nemo_automodel.describe()}")
        if outcome.message:
            lines.append(f"  {outcome.message}")
        if outcome.change is not None:
            lines.extend(_text_change(outcome.change))
    for orphan in orphans:
        verb = "deleted" if orphan.deleted else "orphaned"
        lines.append(f"{orphan.snapshot}: {verb} snapshot (recipe {orphan.recipe} is gone)")
        if orphan.delete_error:
            lines.append(f"  cannot delete it: {orphan.delete_error}")
    if summary := native_summary(outcomes):
        lines.append(summary)
    return "\n".join(lines)


def render_json(outcomes: Sequence[RecipeOutcome], orphans: Sequence[Orphan]) -> str:
    counts = {status: sum(o.status == status for o in outcomes) for status in STATUS_TITLES}
    counts["orphaned"] = len(orphans)
    counts["nemo_automodel"] = {v: sum(o.nemo_automodel is not None and o.nemo_automodel.verdict == v for o in outcomes)
                                for v in NATIVE_VERDICTS}
    payload = {
        "summary": counts,
        "recipes": [asdict(outcome) for outcome in outcomes],
        "orphans": [asdict(orphan) for orphan in orphans],
    }
    return json.dumps(payload, indent=2, sort_keys=True)


def _md_code(text: str) -> str:
    # A code span cannot hold a backtick run of its own length; table cells cannot hold `|`.
    fence = "``" if "`" in text else "`"
    return f"{fence}{text.replace('|', '&#124;')}{fence}"


def _md_summary_row(outcome: RecipeOutcome) -> str:
    change = outcome.change
    frozen = describe_total(change.newly_frozen) if change else ""
    trainable = describe_total(change.newly_trainable) if change else ""
    if change and not change.newly_frozen and not change.newly_trainable:
        # No stored frozen name moved: the row says what did (LoRA adapters, the release, ...).
        frozen, trainable = "no frozen name moved", _md_what_moved(change)
    return (f"| {_md_code(outcome.recipe)} | {STATUS_TITLES[outcome.status]} | {frozen} | {trainable} "
            f"| {html.escape(outcome.nemo_automodel.describe() if outcome.nemo_automodel else '')} |")


def _md_what_moved(change: RecipeChange) -> str:
    """Adapter tensors added and removed, then the header fields that changed. Tensors only: a
    removed adapter counts 0 parameters, and the header line has the trainable parameters."""
    moved = [f"adapters {verb}: {tensor_text(sum(group.tensors for group in groups))}"
             for verb, groups in (("added", change.adapters_added), ("removed", change.adapters_removed)) if groups]
    if change.unmapped:
        moved.append(f"not mapped: {describe_total(change.unmapped)}")
    moved += [f"rate {rates.describe()}: {describe_total(rates.groups)}" for rates in change.rate_changes]
    for reach in change.reach_changes:
        moved += [f"{reach.mix} {verb}: {describe_total(groups)}" for verb, groups in
                  (("newly unreachable", reach.newly_unreachable), ("reached now", reach.newly_reached)) if groups]
        moved += [f"{reach.mix} probe: {reach.probe}"] if reach.probe else []
    if change.renamed:
        moved.append(f"renamed: {renamed_total(change.renamed)}")
    if change.header_changes:
        moved.append("header: " + "; ".join(f"{h.field} {h.old} → {h.new}" for h in change.header_changes))
    return "<br>".join(html.escape(part) for part in moved) or "nothing"


def _md_groups(title: str, groups: Sequence[ModuleGroup], stored_names: Mapping[str, str]) -> Iterator[str]:
    if not groups:
        return
    yield f"**{title}**\n"
    yield "| module | tensors | parameters |"
    yield "|---|---:|---:|"
    yield from (f"| {_md_code(g.label)} | {g.tensors:,} | {g.parameters:,} |" for g in groups)
    yield ""
    yield "```text"
    yield from (line for group in groups for line in compress_names(group.names))
    yield "```\n"
    if stored := [line for group in groups for line in stored_as(group, stored_names)]:
        yield "Stored as:\n"
        yield "```text"
        yield from stored
        yield "```\n"


def _md_renamed(groups: Sequence[RenameGroup]) -> Iterator[str]:
    if not groups:
        return
    yield f"**Renamed: {renamed_total(groups)}**\n"
    yield "| stored | now | tensors | mapping |"
    yield "|---|---|---:|---|"
    yield from (f"| {_md_code(g.stored)} | {_md_code(g.current)} | {g.tensors:,} | {html.escape(g.mapping)} |"
                for g in groups)
    yield ""


def _md_details(outcome: RecipeOutcome) -> Iterator[str]:
    change = outcome.change
    yield f"<details><summary>{html.escape(outcome.recipe)}: {STATUS_TITLES[outcome.status]}</summary>\n"
    if outcome.message:
        yield f"{html.escape(outcome.message)}\n"
    if change is not None and change.header_changes:
        yield "| field | stored | now |"
        yield "|---|---|---|"
        yield from (f"| {h.field} | {_md_code(str(h.old))} | {_md_code(str(h.new))} |" for h in change.header_changes)
        yield ""
    if change is not None:
        for _, title, groups in _change_sections(change):
            yield from _md_groups(title, groups, change.stored_names)
        yield from _md_renamed(change.renamed)
    yield "</details>\n"


def render_markdown(
    outcomes: Sequence[RecipeOutcome], orphans: Sequence[Orphan], *, limit: int | None = COMMENT_LIMIT
) -> str:
    """A pull-request comment: summary table first, each recipe's details folded; within
    ``limit`` characters (``None``: the whole report, for ``--report-file``)."""
    shown = [outcome for outcome in outcomes if outcome.status != "passed"]
    lines = ["### mmfreeze: frozen-parameter changes", ""]
    native = [f"{summary}\n"] if (summary := native_summary(outcomes)) else []
    if not shown and not orphans:
        return "\n".join([*lines, f"All {len(outcomes)} recipes match their snapshots.", "", *native])
    lines += ["| recipe | status | newly frozen | newly trainable | nemo-automodel 0.7 |", "|---|---|---|---|---|"]
    lines += [_md_summary_row(outcome) for outcome in shown]
    lines += [f"| {_md_code(o.recipe)} | {'deleted' if o.deleted else 'orphaned'} snapshot"
              f"{f' (cannot delete it: {html.escape(o.delete_error)})' if o.delete_error else ''} | | | |" for o in orphans]
    lines.append(f"\n{len(outcomes) - len(shown)} other recipes unchanged.\n")
    lines += native
    details = ["\n".join(_md_details(outcome)) for outcome in shown]
    if limit is None:
        return "\n".join([*lines, *details])
    return fit_comment("\n".join(lines), details, limit=limit)


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
