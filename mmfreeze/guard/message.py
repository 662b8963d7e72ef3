"""The text of a guard failure, and the one-line summary a rank posts for the others (pure).

Names are grouped by resolved module, the way snapshot reports group them; each group shows its
first few names in full and counts the rest, so a whole tower flipping stays a short message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from mmfreeze.guard.optimizer import OptimizerFindings
from mmfreeze.guard.ranks import RankReport
from mmfreeze.guard.report import GuardReport, LocalCheck
from mmfreeze.resolver.labels import describe_total, group_names

NAMES_SHOWN = 3
"""Names shown in full per module group."""
GROUPS_SHOWN = 8
"""Module groups shown per section; the rest are counted."""
ITEMS_SHOWN = NAMES_SHOWN * GROUPS_SHOWN
"""Ungrouped optimizer findings (parameters held twice, foreign tensors) shown; the rest are counted."""
RANKS_SHOWN = 16

GroupOf = Callable[[str], str]


def render_report(report: GuardReport, *, group_of: GroupOf, numel_of: Mapping[str, int]) -> str:
    """The error message (after ``<recipe>: ``): headline, what differs, ranks, what to do."""
    lines = [_headline(report)]
    lines += _local_lines(report.local, group_of, numel_of)
    if report.ranks is not None:
        lines += _rank_lines(report.ranks)
    lines += _advice(report)
    return "\n".join(lines)


def summary_line(local: LocalCheck) -> str:
    """What differs on this rank, in one line, for the other ranks' messages."""
    difference = local.difference
    kinds = (("newly frozen", difference.newly_frozen), ("newly trainable", difference.newly_trainable),
             ("missing from the model", difference.missing))
    parts = [f"{len(names):,} {title} (e.g. {names[0]})" for title, names in kinds if names]
    if difference.tensor_count_differs:
        parts.append(
            f"{difference.model_tensors:,} parameter tensors, the snapshot's model {difference.snapshot_tensors:,}"
        )
    if local.optimizer is not None and not local.optimizer.ok:
        parts.append(_optimizer_summary(local.optimizer))
    if local.missing_gradients:
        parts.append(f"{len(local.missing_gradients):,} trainable without a gradient (e.g. {local.missing_gradients[0]})")
    return "; ".join(parts)


def _optimizer_summary(findings: OptimizerFindings) -> str:
    counts = (("frozen held", len(findings.holds_frozen)), ("trainable missed", len(findings.misses_trainable)),
              ("held twice", len(findings.held_twice)), ("not the model's", len(findings.foreign)),
              ("at another rate", len(findings.wrong_rate)))
    return "optimizer: " + ", ".join(f"{count:,} {title}" for title, count in counts if count)


def _headline(report: GuardReport) -> str:
    snapshot = report.local.snapshot
    where = f" on rank {report.rank} of {report.world_size}" if report.rank is not None else ""
    if not report.local.ok:
        return f"the live model does not match the accepted snapshot {snapshot}{where}"
    peers = len(report.ranks.peers) if report.ranks is not None else report.world_size
    of = f"{peers} ranks" if peers == report.world_size else f"{peers} ranks that train this model"
    return f"this rank ({report.rank}) matches the accepted snapshot {snapshot}, but not every one of the {of} does"


def _names_section(
    title: str, names: Sequence[str], group_of: GroupOf, numel_of: Mapping[str, int]
) -> Iterator[str]:
    if not names:
        return
    groups = group_names(names, numel_of=numel_of, group_of=group_of)
    yield f"  {title}: {describe_total(groups)}"
    for group in groups[:GROUPS_SHOWN]:
        yield f"    {group.label}: {group.describe()}"
        yield from (f"      {name}" for name in group.names[:NAMES_SHOWN])
        if group.tensors > NAMES_SHOWN:
            yield f"      ... and {group.tensors - NAMES_SHOWN:,} more"
    rest = groups[GROUPS_SHOWN:]
    if rest:
        yield f"    ... and {len(rest):,} more modules: {describe_total(rest)}"


def _local_lines(local: LocalCheck, group_of: GroupOf, numel_of: Mapping[str, int]) -> Iterator[str]:
    difference = local.difference
    sections = (
        ("newly frozen (frozen here, not frozen in the snapshot)", difference.newly_frozen),
        ("newly trainable (frozen in the snapshot, trainable here)", difference.newly_trainable),
        ("frozen in the snapshot, missing from the model", difference.missing),
    )
    for title, names in sections:
        yield from _names_section(title, names, group_of, numel_of)
    if difference.tensor_count_differs:
        yield (f"  parameter tensors: {difference.snapshot_tensors:,} in the snapshot's model, "
               f"{difference.model_tensors:,} here (parameters were added or removed: LoRA adapters injected "
               "or not, extra modules, another config)")
    if local.optimizer is not None:
        yield from _optimizer_lines(local.optimizer, group_of, numel_of)
    yield from _names_section("trainable, but no gradient after the backward (the loss never reached them)",
                              local.missing_gradients or (), group_of, numel_of)


def _optimizer_lines(findings: OptimizerFindings, group_of: GroupOf, numel_of: Mapping[str, int]) -> Iterator[str]:
    yield from _names_section("optimizer holds frozen parameters", findings.holds_frozen, group_of, numel_of)
    yield from _names_section("optimizer misses trainable parameters", findings.misses_trainable, group_of, numel_of)
    twice = [f"{held.name} (param groups {', '.join(map(str, held.groups))})" for held in findings.held_twice]
    yield from _listed("optimizer holds parameters more than once", twice)
    yield from _listed("optimizer holds tensors that are not parameters of this model", findings.foreign)
    yield from _listed("optimizer trains tensors at another rate than the snapshot's",
                       [wrong.describe() for wrong in findings.wrong_rate])


def _listed(title: str, items: Sequence[str]) -> Iterator[str]:
    if not items:
        return
    yield f"  {title}: {len(items):,}"
    yield from (f"      {item}" for item in items[:ITEMS_SHOWN])
    if len(items) > ITEMS_SHOWN:
        yield f"      ... and {len(items) - ITEMS_SHOWN:,} more"


def _rank_list(ranks: Sequence[int], this_rank: int) -> str:
    shown = [f"{rank} (this rank)" if rank == this_rank else str(rank) for rank in ranks[:RANKS_SHOWN]]
    more = f", ... ({len(ranks):,} in all)" if len(ranks) > RANKS_SHOWN else ""
    return ", ".join(shown) + more


def _rank_lines(ranks: RankReport) -> Iterator[str]:
    if ranks.disagreeing:
        yield f"  ranks that disagree: {_rank_list(ranks.disagreeing, ranks.rank)}"
        yield from (f"    rank {rank}: {text}" for rank, text in ranks.summaries.items() if rank != ranks.rank)
    if ranks.missing:
        yield f"  ranks that did not report within {ranks.timeout_s:g} s: {_rank_list(ranks.missing, ranks.rank)}"
    if ranks.agreeing:
        yield f"  ranks that agree: {_rank_list(ranks.agreeing, ranks.rank)}"


def _advice(report: GuardReport) -> Iterator[str]:
    local = report.local
    if not local.difference.empty:
        yield ("  what to do: if the snapshot is right, find the step after the recipe that changed "
               "requires_grad (PEFT injection, checkpoint loading, embedding resizing, code that sets "
               "requires_grad); if the model is right, change the recipe, then review and accept its "
               f"snapshot with `mmfreeze snapshot --update {local.recipe}`")
        yield from _version_hint(local)
    if local.optimizer is not None and not local.optimizer.ok:
        yield ("  what to do: build the optimizer after the model is final (PEFT, FSDP2 wrapping, freezing), "
               "from its trainable parameters, each once, in the groups of the recipe's "
               "optimizer.param_group_overrides (`mmfreeze explain` shows them)")
    if local.missing_gradients:
        yield ("  what to do: freeze what the loss does not reach (a `freeze_config` entry), run the skipped "
               "path on a dummy input (`distributed.multimodal.<modality>.run_dummy_forward: true`), or change the "
               "data mix so that batches reach it")
    ranks = report.ranks
    if ranks is not None and ranks.missing:
        yield "  what to do: call verify_frozen_set on every rank, the same number of times, once the model is set up"
    if ranks is not None and any(rank != ranks.rank for rank in ranks.disagreeing):
        yield "  every rank stops here; each disagreeing rank's own error lists its differences in full"


def _version_hint(local: LocalCheck) -> Iterator[str]:
    from mmfreeze.versions import installed_version

    installed = installed_version("transformers")
    if installed != local.snapshot_transformers:
        yield (f"  note: the snapshot's module tree came from transformers {local.snapshot_transformers}, this run "
               f"has {installed}; parameter names differ between releases")
