"""Per-file results of a migration run, and the report in text, Markdown or JSON."""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from mmfreeze.pr_comment import COMMENT_LIMIT, fit_comment
from mmfreeze.resolver.labels import ModuleGroup, describe_total

if TYPE_CHECKING:
    from mmfreeze.memory.change import ChangeCost  # sized only for a changed file, where it is shown

Status = Literal[
    "preserved", "changed", "needs-escape-hatch", "already-migrated", "no-freeze-config",
    "python-rewritten", "unchanged", "skipped", "kept", "recompiled",
]
"""``recompiled``: only the compiled sections were written again, from a source that did not change."""
REPORT_FORMATS = ("text", "markdown", "json")
PYTHON_NOTE = (
    "Python call sites name no model: a call is rewritten only when bound to models "
    "(`# mmfreeze: models=...` or `recipes=...`) and proven equal on each of them; the others keep "
    "the legacy call and are listed with file:line"
)


@dataclass(frozen=True, kw_only=True)
class Finding:
    """A site that was not rewritten because rewriting it could not be proven safe."""

    line: int
    rule: str
    message: str


@dataclass(frozen=True, kw_only=True)
class FileResult:
    display: str
    old_text: str
    new_text: str
    status: Status
    rules: tuple[str, ...] = ()
    """Rule ids that changed this file."""
    notes: tuple[str, ...] = ()
    newly_frozen: tuple[ModuleGroup, ...] = ()
    """What this file's migration newly freezes, by module (tensors, parameters, names)."""
    newly_trainable: tuple[ModuleGroup, ...] = ()
    findings: tuple[Finding, ...] = ()
    error: str | None = None
    nemo_automodel: str = ""
    """For a rewritten recipe: whether nemo-automodel 0.7 runs it natively or needs ``mmfreeze.nemo``."""
    cost: ChangeCost | None = None
    """For ``changed``: what the change of the trainable set costs per rank (or why it cannot be sized)."""

    @property
    def changed(self) -> bool:
        return self.new_text != self.old_text

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.old_text.splitlines(keepends=True), self.new_text.splitlines(keepends=True),
            fromfile=f"a/{self.display}", tofile=f"b/{self.display}",
        ))

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.display, "status": self.status, "would_change": self.changed, "rules": list(self.rules),
            "notes": list(self.notes),
            "newly_frozen": _groups_json(self.newly_frozen), "newly_trainable": _groups_json(self.newly_trainable),
            "findings": [{"line": f.line, "rule": f.rule, "message": f.message} for f in self.findings],
            "error": self.error, "nemo_automodel": self.nemo_automodel,
            **({"cost": asdict(self.cost)} if self.cost is not None else {}),
        }


def _groups_json(groups: Sequence[ModuleGroup]) -> dict[str, dict[str, int]]:
    return {group.label: {"tensors": group.tensors, "parameters": group.parameters} for group in groups}


def summary_counts(results: Sequence[FileResult]) -> dict[str, int]:
    return dict(sorted(Counter(result.status for result in results).items()))


def integration_summary(results: Sequence[FileResult]) -> str:
    """How many rewritten recipes need mmfreeze's integration to train with nemo-automodel 0.7."""
    rewritten = [result.nemo_automodel for result in results if result.nemo_automodel]
    if not rewritten:
        return ""
    needs = rewritten.count("needs the integration")
    return (f"{needs} of {len(rewritten)} rewritten recipes need mmfreeze's integration to train with "
            f"nemo-automodel 0.7 (`mmfreeze train -- automodel RECIPE` or `mmfreeze.nemo.install()`); "
            f"{rewritten.count('native')} run natively")


def render_json(results: Sequence[FileResult], *, mode: str) -> str:
    return json.dumps({"format": 1, "mode": mode, "summary": summary_counts(results),
                       "integration": integration_summary(results),
                       "files": [r.to_json() for r in results]}, indent=2, sort_keys=False)


def file_lines(result: FileResult) -> list[str]:
    """The facts about one file as plain sentences (shared by the text and Markdown reports)."""
    lines = [f"rules: {', '.join(result.rules)}"] if result.rules else []
    if result.error:
        lines.append(f"skipped: {result.error}")
    lines.extend(result.notes)
    if result.cost is not None:
        lines.append(f"cost: {result.cost.describe()}")
    for title, groups in (("newly frozen", result.newly_frozen), ("newly trainable", result.newly_trainable)):
        if groups:
            lines.append(f"{title}: {describe_total(groups)}")
            for group in groups:
                delta = result.cost.of_group(title, group.label) if result.cost is not None else None
                lines.append(f"  {group.label}: {group.describe()}" + (f"; {delta.brief()}" if delta else ""))
    lines.extend(f"{result.display}:{f.line}: {f.rule} not rewritten: {f.message}" for f in result.findings)
    return lines


def render_markdown(results: Sequence[FileResult], *, mode: str, limit: int | None = COMMENT_LIMIT) -> str:
    """A pull-request comment: counts and one table row per file, then each file's details while
    they fit in ``limit`` characters (``None``: the whole report, for ``--report-file``)."""
    counts = ", ".join(f"{count} {status}" for status, count in summary_counts(results).items())
    integration = [integration_summary(results), ""] if integration_summary(results) else []
    head = [f"## mmfreeze migrate (`--mode {mode}`)", "", counts, "", *integration, "| file | status | rules |", "|---|---|---|"]
    listed = [r for r in results if r.status != "unchanged" or file_lines(r)]
    head.extend(f"| `{r.display}` | {r.status} | {' '.join(r.rules)} |" for r in listed)
    if len(listed) < len(results):
        head += ["", f"{len(results) - len(listed)} unchanged files with nothing to report are counted above, not listed."]
    if any(r.rules and any(rule.startswith("MF1") for rule in r.rules) or r.findings for r in results):
        head += ["", f"> {PYTHON_NOTE}."]
    details = [
        "\n".join(["", f"### `{result.display}` — {result.status}", "", "```", *lines, "```"])
        for result in results if (lines := file_lines(result))
    ]
    if limit is None:
        return "\n".join([*head, *details]) + "\n"
    return fit_comment("\n".join(head), details, limit=limit) + "\n"
