"""Reports of a snapshot run: plain text (terminal, pytest failures), Markdown (pull-request
comment), JSON (machines). Pure: results in, text out."""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from mmfreeze.counts import tensor_text
from mmfreeze.distributed.native import NATIVE_VERDICTS
from mmfreeze.models.probe.run import RAISES_ALIKE
from mmfreeze.pr_comment import COMMENT_LIMIT, fit_comment
from mmfreeze.snapshots.compress import compress_names
from mmfreeze.resolver.labels import ModuleGroup, describe_total
from mmfreeze.snapshots.diff import ReachChange, RecipeChange, RenameGroup
from mmfreeze.snapshots.results import RELEASE_ONLY, Orphan, RecipeOutcome

if TYPE_CHECKING:
    from mmfreeze.memory.change import ChangeCost, MemoryDelta

STATUS_TITLES = {
    "input_error": "input error", "changed": "changed", "missing": "missing snapshot",
    "builder_switch": "built by another class", "probe_only": "probe only",
    "renamed": "renamed", "version_only": "version only", "updated": "accepted change", "written": "new snapshot written",
    "passed": "unchanged",
}
"""Every status's title, in report order: what needs a person first."""
RELEASE_ONLY_MEANS = {
    "probe_only": "the release changed how a data mix was probed for reachability; no tensor's trainability, "
                  "adapter, rate or reachability moved",
    "renamed": "the release renamed tensors, each as trainable as before",
    "version_only": "no frozen name, adapter or rate moved",
}


def by_severity(outcomes: Sequence[RecipeOutcome]) -> list[RecipeOutcome]:
    """``outcomes`` in report order (:data:`STATUS_TITLES`); changed recipes the biggest first (the
    parameters newly frozen and newly trainable), the others of a status in the run's order."""
    order = {status: index for index, status in enumerate(STATUS_TITLES)}
    return sorted(outcomes, key=lambda outcome: (order[outcome.status], -moved_parameters(outcome)))


def moved_parameters(outcome: RecipeOutcome) -> int:
    """How many parameters a changed recipe newly freezes or newly trains (0 for other outcomes)."""
    if outcome.status != "changed" or outcome.change is None:
        return 0
    return sum(group.parameters for group in (*outcome.change.newly_frozen, *outcome.change.newly_trainable))


SWITCH_MEANS = ("their snapshots describe another class than this environment builds, so they can be checked "
                "only where they were made (the builder and transformers each names); a repository commits the "
                "snapshots of the environment it trains in, and checks them there")


def builder_switches(outcomes: Sequence[RecipeOutcome]) -> list[tuple[str, int]]:
    """Each kind of builder switch (:func:`~mmfreeze.snapshots.check.builder_switch`) with its count, most first."""
    kinds = Counter(outcome.message or "" for outcome in outcomes if outcome.status == "builder_switch")
    return kinds.most_common()


MOVE_FIELDS = ("transformers", "framework", "builder")
"""The release fields a collapsed line names (a ``divergence`` line names one class: details only)."""


def release_move(outcomes: Sequence[RecipeOutcome]) -> str:
    """What made ``outcomes``' snapshots and what made them now, each move once."""
    moves = dict.fromkeys(f"{h.field} {h.old} → {h.new}" for field in MOVE_FIELDS for outcome in outcomes
                          if outcome.change for h in outcome.change.header_changes if h.field == field)
    return "; ".join(moves)


def probe_line(reach: ReachChange) -> str:
    """A mix probed another way, and, where its forward now raises, what that means for training."""
    line = f"{reach.mix} probe: {reach.probe}"
    if reach.why.startswith(RAISES_ALIKE):
        return (f"{line}: the model's own forward raises under this release ({reach.why.removeprefix(RAISES_ALIKE)}"
                .replace("(: ", "(") + "), so it cannot train with this class under this release")
    return f"{line} ({reach.why})" if reach.why else line


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


def _text_groups(
    title: str, groups: Sequence[ModuleGroup], stored_names: Mapping[str, str], cost: ChangeCost | None,
) -> Iterator[str]:
    if not groups:
        return
    yield f"  {title}: {describe_total(groups)}"
    for group in groups:
        yield f"    {group.label}: {group.describe()}"
        if cost is not None and (delta := cost.of_group(title, group.label)) is not None:
            yield f"      cost: {delta.brief()}"
        yield from (f"      {line}" for line in compress_names(group.names))
        if stored := stored_as(group, stored_names):
            yield "      stored as:"
            yield from (f"        {line}" for line in stored)


def _text_change(change: RecipeChange, cost: ChangeCost | None) -> Iterator[str]:
    if cost is not None:
        yield f"  cost: {cost.describe()}"
    for header in change.header_changes:
        yield f"  {header.field}: {header.old} -> {header.new}"
    for title, _, groups in _change_sections(change):
        yield from _text_groups(title, groups, change.stored_names, cost)
    yield from (f"  {probe_line(reach)}" for reach in change.reach_changes if reach.probe)
    if change.renamed:
        yield f"  renamed: {renamed_total(change.renamed)}"
        yield from (f"    {group.describe()}" for group in change.renamed)


def native_summary(outcomes: Sequence[RecipeOutcome]) -> str:
    """One line: how many recipes nemo-automodel 0.7 runs natively and how many need ``mmfreeze.nemo``."""
    verdicts = [outcome.nemo_automodel.verdict for outcome in outcomes if outcome.nemo_automodel]
    if not verdicts:
        return ""
    native, needs = verdicts.count("native"), verdicts.count("needs the integration")
    rejected = len(verdicts) - native - needs
    counts = ([f"{native} run{'s' * (native == 1)} natively"] * bool(native)
              + [f"{needs} need{'s' * (needs == 1)} mmfreeze's runtime integration (`mmfreeze train`)"] * bool(needs)
              + [f"{rejected} {'is' if rejected == 1 else 'are'} rejected until `mmfreeze migrate` rewrites "
                 f"{'it' if rejected == 1 else 'them'}"] * bool(rejected))
    return f"nemo-automodel 0.7: {', '.join(counts)}"


def render_text(outcomes: Sequence[RecipeOutcome], orphans: Sequence[Orphan]) -> str:
    """Every outcome but ``passed``, then orphans, then how the framework runs the recipes; the
    caller prints it without markup."""
    lines: list[str] = []
    for outcome in by_severity(outcomes):
        if outcome.status in ("passed", "builder_switch"):
            continue
        lines.append(f"{outcome.recipe}: {STATUS_TITLES[outcome.status]} ({outcome.snapshot})")
        if outcome.nemo_automodel:
            lines.append(f"  nemo-automodel 0.7: {outcome.nemo_automodel.describe()}")
        if outcome.message:
            lines.append(f"  {outcome.message}")
        if outcome.change is not None:
            lines.extend(_text_change(outcome.change, outcome.cost))
    for orphan in orphans:
        verb = "deleted" if orphan.deleted else "orphaned"
        lines.append(f"{orphan.snapshot}: {verb} snapshot (recipe {orphan.recipe} is gone)")
        if orphan.delete_error:
            lines.append(f"  cannot delete it: {orphan.delete_error}")
    if switches := builder_switches(outcomes):
        lines.append(f"{sum(count for _, count in switches)} built by another class: {SWITCH_MEANS}")
        lines += [f"  {count} × {kind}" for kind, count in switches]
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
    status = STATUS_TITLES[outcome.status]
    if outcome.status == "input_error" and outcome.message:
        status += ": " + html.escape(_without_recipe(outcome.message, outcome.recipe)).replace("|", "&#124;")
    return (f"| {_md_code(outcome.recipe)} | {status} | {frozen} | {trainable} "
            f"| {html.escape(outcome.nemo_automodel.describe() if outcome.nemo_automodel else '')} |")


def _without_recipe(message: str, recipe: str) -> str:
    """An input error's message as a table cell beside its recipe: one line, without the recipe's
    name in front, at most :data:`CELL_CHARACTERS` characters."""
    text = " ".join(message.removeprefix(f"{recipe}: ").split())
    return text if len(text) <= CELL_CHARACTERS else text[:CELL_CHARACTERS - 1] + "…"


CELL_CHARACTERS = 300


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
        moved += [probe_line(reach)] if reach.probe else []
    if change.renamed:
        moved.append(f"renamed: {renamed_total(change.renamed)}")
    if change.header_changes:
        moved.append("header: " + "; ".join(f"{h.field} {h.old} → {h.new}" for h in change.header_changes))
    return "<br>".join(html.escape(part) for part in moved) or "nothing"


def _md_groups(
    kind: str, title: str, groups: Sequence[ModuleGroup], stored_names: Mapping[str, str], cost: ChangeCost | None,
) -> Iterator[str]:
    if not groups:
        return
    yield f"**{title}**\n"
    deltas = [cost.of_group(kind, g.label) if cost is not None else None for g in groups]
    if any(deltas):
        yield "| module | tensors | parameters | per rank |"
        yield "|---|---:|---:|---:|"
        yield from (f"| {_md_code(g.label)} | {g.tensors:,} | {g.parameters:,} | "
                    f"{html.escape(_per_rank(delta)) if delta else ''} |" for g, delta in zip(groups, deltas, strict=True))
    else:
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
    if outcome.cost is not None:
        yield f"Cost: {html.escape(outcome.cost.describe())}\n"
    if change is not None:
        for kind, title, groups in _change_sections(change):
            yield from _md_groups(kind, title, groups, change.stored_names, outcome.cost)
        yield from _md_renamed(change.renamed)
    yield "</details>\n"


def render_markdown(
    outcomes: Sequence[RecipeOutcome], orphans: Sequence[Orphan], *, limit: int | None = COMMENT_LIMIT
) -> str:
    """A pull-request comment that leads with what changed: a row per recipe that needs a person
    (input errors with their reason, changes, missing snapshots), then one line per kind of release
    difference, then how to accept; each changed recipe's details folded below. Within ``limit``
    characters (``None``: the whole report, for ``--report-file``)."""
    ordered = by_severity([outcome for outcome in outcomes if outcome.status != "passed"])
    rows = [outcome for outcome in ordered if outcome.status not in (*RELEASE_ONLY, "builder_switch")]
    lines = ["### mmfreeze: frozen-parameter changes", "", *_largest_cost(rows)]
    native = [f"{summary}\n"] if (summary := native_summary(outcomes)) else []
    if not ordered and not orphans:
        return "\n".join([*lines, f"All {len(outcomes)} recipes match their snapshots.", "", *native])
    if rows or orphans:
        lines += ["| recipe | status | newly frozen | newly trainable | nemo-automodel 0.7 |", "|---|---|---|---|---|"]
        lines += [_md_summary_row(outcome) for outcome in rows]
        lines += [f"| {_md_code(o.recipe)} | {'deleted' if o.deleted else 'orphaned'} snapshot"
                  f"{f' (cannot delete it: {html.escape(o.delete_error)})' if o.delete_error else ''} | | | |"
                  for o in orphans]
        lines.append("")
    if switches := builder_switches(ordered):
        lines.append(f"**{sum(count for _, count in switches)} built by another class**: {SWITCH_MEANS}.\n")
        lines += [f"- {count} × {html.escape(kind)}" for kind, count in switches] + [""]
    for status in RELEASE_ONLY:
        if same := [outcome for outcome in ordered if outcome.status == status]:
            lines.append(f"**{len(same)} {STATUS_TITLES[status]}** ({html.escape(release_move(same))}): "
                         f"{RELEASE_ONLY_MEANS[status]}.\n")
    lines.append(f"{len(outcomes) - len(ordered)} other recipes unchanged.\n")
    lines += native
    if advice := acceptance_advice(ordered, orphans):
        lines.append(advice + "\n")
    details = ["\n".join(_md_details(outcome)) for outcome in rows if outcome.change is not None or outcome.message]
    details += [_md_release_details(status, [o for o in ordered if o.status == status]) for status in RELEASE_ONLY
                if status != "version_only" and any(o.status == status for o in ordered)]
    if limit is None:
        return "\n".join([*lines, *details])
    return fit_comment("\n".join(lines), details, limit=limit)


def _largest_cost(outcomes: Sequence[RecipeOutcome]) -> list[str]:
    """The first line of a report with changes: the change that costs a rank most (by its size,
    either way), so a reviewer sees first whether a run still fits."""
    sized = [(outcome.recipe, outcome.cost.total) for outcome in outcomes
             if outcome.cost is not None and outcome.cost.total is not None]
    if not sized:
        return []
    recipe, delta = max(sized, key=lambda pair: abs(pair[1].total))
    return [f"**Largest change per rank**: {_md_code(recipe)}: {html.escape(delta.describe())}", ""]


def _per_rank(delta: MemoryDelta) -> str:
    """``+535 MB at 8 ranks``: a table cell (the details say once what it counts)."""
    return f"{delta.per_rank()} at {delta.world_size} ranks"


def acceptance_advice(outcomes: Sequence[RecipeOutcome], orphans: Sequence[Orphan]) -> str:
    """How to accept what a run found, never more than that: release differences alone can be
    accepted on their own, and a real change is named as needing review (``""``: nothing to accept)."""
    release = sum(outcome.status in RELEASE_ONLY for outcome in outcomes)
    real = sum(outcome.status in ("changed", "missing") for outcome in outcomes) + sum(not o.deleted for o in orphans)
    switched = sum(outcome.status == "builder_switch" for outcome in outcomes)
    advice = _acceptance(release, real)
    if switched:
        where = (f"{switched} built by another class: check {'it' if switched == 1 else 'them'} where the snapshots "
                 "were made (`--accept-release` never writes them)")
        return f"{advice}; {where}" if advice else where
    return advice


def _acceptance(release: int, real: int) -> str:
    if release and real:
        return (f"{release} differ in the release alone: accept only those with `mmfreeze snapshot --accept-release "
                f"PATHS`; review the {real} other{'s' * (real > 1)} first, then `mmfreeze snapshot --update PATHS`")
    if release:
        return "these differ in the release alone: accept them with `mmfreeze snapshot --accept-release PATHS`"
    if real:
        return "review the report, then accept with `mmfreeze snapshot --update PATHS`"
    return ""


def _md_release_details(status: str, outcomes: Sequence[RecipeOutcome]) -> str:
    """The recipes of one kind of release difference, a line each: the renames and probes that differ
    (a version-only one has neither: its collapsed line says everything)."""
    lines = [f"<details><summary>{len(outcomes)} {STATUS_TITLES[status]}</summary>\n"]
    for outcome in outcomes:
        change = outcome.change
        parts = [f"renamed {renamed_total(change.renamed)}"] * bool(change and change.renamed)
        parts += [probe_line(reach) for reach in (change.reach_changes if change else ()) if reach.probe]
        lines.append(f"- {_md_code(outcome.recipe)}" + (f": {html.escape('; '.join(parts))}" if parts else ""))
    return "\n".join([*lines, "", "</details>\n"])


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
