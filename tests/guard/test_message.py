"""The failure text: grouped by resolved module as the snapshot reports group, first names in
full, counts for the rest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mmfreeze.exceptions import FrozenSetMismatchError
from mmfreeze.guard import verify_frozen_set
from mmfreeze.guard.compare import FrozenSetDifference
from mmfreeze.guard.message import GROUPS_SHOWN, NAMES_SHOWN, render_report, summary_line
from mmfreeze.guard.optimizer import HeldTwice, OptimizerFindings
from mmfreeze.guard.report import GuardReport, LocalCheck
from mmfreeze.models.structure import structure_of
from mmfreeze.snapshots.grouping import grouper
from tests.guard.helpers import FINETUNE

GROUP_LINE = re.compile(r"^    (?!\.\.\. )(?P<label>\S.*): (?P<tensors>[\d,]+) tensors? / [\d,.]+[KMBT]? parameters$")


def sections(text: str) -> dict[str, dict[str, list[str]]]:
    """Section title -> group label -> the lines under it (names, then `... and N more`)."""
    found: dict[str, dict[str, list[str]]] = {}
    for line in text.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            section = found.setdefault(line.strip().split(":")[0], {})
        elif (match := GROUP_LINE.match(line)) is not None:
            group = section.setdefault(match["label"], [])
        elif line.startswith("      "):
            group.append(line.strip())
    return found


def local_check(difference: FrozenSetDifference, optimizer: OptimizerFindings | None = None) -> LocalCheck:
    return LocalCheck(recipe="r.yaml", snapshot=Path("snapshots/r.yaml.frozen.txt"), difference=difference,
                      optimizer=optimizer, snapshot_transformers="5.24.0")


def difference(**names: tuple[str, ...]) -> FrozenSetDifference:
    fields = {"newly_frozen": (), "newly_trainable": (), "missing": (), **names}
    return FrozenSetDifference(**fields, model_tensors=10, snapshot_tensors=10)


def test_a_frozen_language_model_is_reported_under_the_snapshot_reports_groups(finetune):
    for name, parameter in finetune.model.named_parameters():
        if not name.startswith("model.visual."):
            parameter.requires_grad_(False)

    with pytest.raises(FrozenSetMismatchError) as caught:
        verify_frozen_set(finetune.model, FINETUNE)

    newly_frozen = caught.value.details.local.difference.newly_frozen
    group_of = grouper(structure_of(finetune.model))
    expected: dict[str, list[str]] = {}
    for name in newly_frozen:
        expected.setdefault(group_of(name), []).append(name)
    shown = sections(str(caught.value))["newly frozen (frozen here, not frozen in the snapshot)"]
    assert len(newly_frozen) == 339 and shown.keys() == expected.keys()
    for label, names in expected.items():
        more = [f"... and {len(names) - NAMES_SHOWN:,} more"] if len(names) > NAMES_SHOWN else []
        assert shown[label] == sorted(names)[:NAMES_SHOWN] + more, label


def test_groups_beyond_the_shown_ones_are_counted():
    names = tuple(f"m{group}.w{index}" for group in range(GROUPS_SHOWN + 2) for index in range(5))
    report = GuardReport(local=local_check(difference(newly_trainable=names)), rank=None, world_size=1, ranks=None)

    text = render_report(report, group_of=lambda name: name.split(".")[0], numel_of={name: 10 for name in names})

    shown = sections(text)["newly trainable (frozen in the snapshot, trainable here)"]
    assert list(shown) == [f"m{group}" for group in range(GROUPS_SHOWN)]
    assert shown["m0"] == ["m0.w0", "m0.w1", "m0.w2", "... and 2 more"]
    assert "    ... and 2 more modules: 10 tensors / 100 parameters" in text.splitlines()


def test_optimizer_violations_are_each_named():
    findings = OptimizerFindings(
        holds_frozen=("a.w",), misses_trainable=("b.w",), held_twice=(HeldTwice(name="c.w", groups=(0, 1)),),
        foreign=("param_groups[1] item 0: shape (2,)",),
    )
    report = GuardReport(local=local_check(difference(), findings), rank=None, world_size=1, ranks=None)

    text = render_report(report, group_of=lambda name: name[0], numel_of={})

    for line in ("  optimizer holds frozen parameters: 1 tensor / 0 parameters", "      a.w",
                 "  optimizer misses trainable parameters: 1 tensor / 0 parameters", "      b.w",
                 "  optimizer holds parameters more than once: 1", "      c.w (param groups 0, 1)",
                 "  optimizer holds tensors that are not parameters of this model: 1",
                 "      param_groups[1] item 0: shape (2,)"):
        assert line in text.splitlines()
    assert "what to do: build the optimizer after the model is final" in text


def test_the_summary_a_rank_posts_counts_each_kind_and_names_the_first():
    local = local_check(
        FrozenSetDifference(newly_frozen=("a", "b"), newly_trainable=(), missing=("z",),
                            model_tensors=9, snapshot_tensors=10),
        OptimizerFindings(holds_frozen=("a",), misses_trainable=(), held_twice=(), foreign=()),
    )

    assert summary_line(local) == ("2 newly frozen (e.g. a); 1 missing from the model (e.g. z); "
                                   "9 parameter tensors, the snapshot's model 10; optimizer: 1 frozen held")


def test_a_different_transformers_release_is_pointed_out(monkeypatch):
    local = LocalCheck(recipe="r.yaml", snapshot=Path("s"), difference=difference(newly_frozen=("a",)),
                       optimizer=None, snapshot_transformers="4.0.0")

    text = render_report(GuardReport(local=local, rank=None, world_size=1, ranks=None), group_of=str, numel_of={})

    assert "the snapshot's module tree came from transformers 4.0.0, this run has" in text
