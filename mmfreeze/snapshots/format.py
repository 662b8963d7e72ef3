"""The snapshot file: a short stable header, the frozen parameter names, then, for a recipe with
`peft:`, its LoRA adapter names, then the tensors its optimizer trains at another rate, then, for a
model whose names are not its checkpoint's, the checkpoint renames of what built it (pure text <-> data).

Example::

    # mmfreeze frozen-parameter snapshot. Review changes; regenerate with `mmfreeze snapshot --update`.
    format: 4
    recipe: example_configs/vlm_peft/qwen2_5_vl/qwen2_5_vl_7b_lora_cord_v2.yaml
    model_id: Qwen/Qwen2.5-VL-7B-Instruct
    config: registry (published)
    architecture: Qwen2_5_VLForConditionalGeneration
    builder: transformers
    framework: nemo-automodel 0.7
    transformers: 5.24.0
    frozen_tensors: 729
    trainable_tensors: 224
    frozen_parameters: 8292166656
    trainable_parameters: 10092544
    ---
    lm_head.weight
    ...
    model.visual.patch_embed.proj.weight
    --- lora adapters
    model.language_model.layers.{0..27}.self_attn.k_proj.lora_A.weight
    ...
    --- checkpoint renames
    model.* -> model.language_model.*
    visual.* -> model.visual.*

Adapters train unless `freeze_config` freezes them, so the frozen names alone would show an added
``exclude_modules`` entry only as smaller trainable counts; the adapter names let a report say
which modules lost their adapters. A recipe without `peft:` has no adapter section; one whose
`peft:` adapts nothing has an empty one.

Everything in it is decided by the recipe, its model config, the freezing rules and the
transformers release that built the module tree (module paths, and so parameter names, change
between releases, so the header records it): no times, no absolute paths. ``format`` changes deliberately invalidate every snapshot.
The input vocabulary is not in it: a recipe rewritten to another vocabulary with the same
behaviour keeps the same snapshot. ``framework`` names the nemo-automodel release whose rules gave
the set (``mmfreeze.boundary.releases``), with the reason when it is not the current one.

``builder`` names what built the model (``transformers``, or ``nemo-automodel 0.7.0``: the
framework's own class where it has one, :mod:`mmfreeze.models.framework`). When transformers
built the model of an architecture the framework builds itself, a ``divergence`` line says so::

    divergence: built as transformers class Qwen3_5ForConditionalGeneration; the framework builds its own Qwen3_5ForConditionalGeneration (nemo_automodel.components.models.qwen3_5.model) for this architecture

Why the builder was chosen (``auto``: is the framework installed, with its transformers?) is not
stored: a snapshot is the same on a machine without the framework as in the main environment.
The checkpoint renames are what transformers' conversion mapping does to this model's names when
it loads the checkpoint (:mod:`mmfreeze.models.renames`). They are stored because the names change
between releases (5.24 moved the Qwen-Omni thinker's towers under ``model``) and a snapshot is
compared under another release, which may not know this one's mapping: the comparison maps the
stored names through them onto the current model's (:mod:`mmfreeze.snapshots.diff`).

A recipe whose optimizer puts tensors at another rate than the base one lists them, one section
per ``(lr_mult, wd_mult)``, after the adapters (``--- rate: lr_mult 0.1, wd_mult 1``).

Then what the recipe trains and its loss never reaches (:mod:`mmfreeze.reachability`): the header's
``mixes`` says which data mixes its batches carry and who says so, and one section per mix gives
the method and the trainable tensors no path from the loss reaches, by resolved module::

    mixes: text+image (dataset builder make_cord_v2_dataset)
    ...
    --- unreachable: text+image, FakeTensorMode forward at full size: 18 tensors
    model.vision_tower (vision tower): 18 tensors
      model.vision_tower.encoder.layers.23.layer_norm1.bias
      ...
    --- unreachable: text+video: not probed (mmfreeze has no text+video batch for X yet)

Format 3 added ``builder`` and ``divergence``; format 4 the ``--- lora adapters`` section; format 5
the ``--- rate`` and ``--- checkpoint renames`` sections; format 6 ``mixes`` and the
``--- unreachable`` sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

from mmfreeze.counts import tensor_text
from mmfreeze.exceptions import SnapshotError
from mmfreeze.freeze.optimizer import multiplier_problem
from mmfreeze.models.renames import RenameRule, Renames
from mmfreeze.snapshots.compress import compress_names, expand_lines

FORMAT_VERSION = 6
TITLE = "# mmfreeze frozen-parameter snapshot. Review changes; regenerate with `mmfreeze snapshot --update`."
SEPARATOR = "---"
ADAPTERS_SECTION = f"{SEPARATOR} lora adapters"
"""The line after the frozen names that starts the LoRA adapter names."""
RATE_SECTION = f"{SEPARATOR} rate"
"""The line that starts the trainable tensors at one ``lr_mult``/``wd_mult`` other than 1/1:
``--- rate: lr_mult 0.1, wd_mult 1``; one section per rate, after the adapters."""
UNREACHABLE_SECTION = f"{SEPARATOR} unreachable"
"""The line that starts one data mix's trainable tensors the loss never reaches, after the rates:
``--- unreachable: <mix>, <method>: <n> tensors`` (or ``none``), or ``--- unreachable: <mix>: not probed (<why>)``."""
RENAMES_SECTION = f"{SEPARATOR} checkpoint renames"
"""The line that starts the checkpoint renames, after every name, followed by ``: <what gave them>``."""
SECTIONS = (ADAPTERS_SECTION, RATE_SECTION, UNREACHABLE_SECTION, RENAMES_SECTION)
"""The body's sections after the frozen names, in the order they are written (rates and mixes repeat)."""
REPEATED = frozenset({RATE_SECTION, UNREACHABLE_SECTION})
_RATE_TITLE = re.compile(rf"^{RATE_SECTION}: lr_mult (?P<lr>[0-9.e+-]+), wd_mult (?P<wd>[0-9.e+-]+)$")
_UNREACHABLE_TITLE = re.compile(
    rf"^{UNREACHABLE_SECTION}: (?P<mix>[a-z+]+)(?:, (?P<method>[^:]+): (?:none|[0-9,]+ tensors?)|: not probed \((?P<why>.*)\))$")
GROUP_INDENT = "  "
"""An unreachable section's names sit under their group's line (``<label>: <n> tensors``), indented."""
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


@dataclass(frozen=True, kw_only=True)
class SnapshotHeader:
    """What a reviewer reads before the names; compared field by field in reports."""

    recipe: str
    """Recipe path relative to the snapshot run's root, ``/``-separated."""
    model_id: str
    config: str
    """Where the model config came from and how faithful it is to the published checkpoint's:
    ``registry (published|partial|default)``, ``configs (hub|hf-cache|local)``, ``hf-cache``, ``hub``, ``local``."""
    architecture: str
    """Class name of the built model."""
    builder: str = "transformers"
    """What built it: ``transformers``, or ``nemo-automodel <release>`` (the framework's way)."""
    divergence: str = ""
    """Set when transformers built the model of an architecture the framework builds with its own
    class: which class the framework builds (and, after a fallback, why it was not built here).
    Not rendered when empty."""
    framework: str
    """The framework release whose rules applied, e.g. ``nemo-automodel 0.7``."""
    transformers: str
    """The transformers release that built the model (its module tree names the parameters)."""
    frozen_tensors: int
    trainable_tensors: int
    frozen_parameters: int
    """Frozen element count (numel)."""
    trainable_parameters: int
    mixes: str = ""
    """The data mixes the recipe's batches carry, and who says so (:class:`mmfreeze.reachability.mix.Mixes`)."""


@dataclass(frozen=True, kw_only=True)
class RateLines:
    """The trainable tensors at one rate, stored as the frozen names are."""

    lr_mult: float
    wd_mult: float
    lines: tuple[str, ...]

    def title(self) -> str:
        return f"{RATE_SECTION}: lr_mult {self.lr_mult:g}, wd_mult {self.wd_mult:g}"


@dataclass(frozen=True, kw_only=True)
class GroupLines:
    """One resolved module's unreachable tensors, stored as the frozen names are."""

    label: str
    tensors: int
    lines: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ReachLines:
    """One data mix's trainable tensors the loss never reaches (or why the mix was not probed)."""

    mix: str
    method: str = ""
    """How the graph was read; ``""`` when not probed."""
    not_probed: str = ""
    groups: tuple[GroupLines, ...] = ()

    def title(self) -> str:
        if not self.method:
            return f"{UNREACHABLE_SECTION}: {self.mix}: not probed ({self.not_probed})"
        tensors = sum(group.tensors for group in self.groups)
        return f"{UNREACHABLE_SECTION}: {self.mix}, {self.method}: {tensor_text(tensors) if tensors else 'none'}"

    def body(self) -> list[str]:
        return [line for group in self.groups
                for line in (f"{group.label}: {tensor_text(group.tensors)}", *(GROUP_INDENT + name for name in group.lines))]


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    header: SnapshotHeader
    lines: tuple[str, ...]
    """The frozen names as the file stores them: sorted and range-compressed (see ``compress``)."""
    adapter_lines: tuple[str, ...] | None = None
    """The LoRA adapter names of a recipe with `peft:`, stored as ``lines`` are; ``None``: no `peft:`."""
    rates: tuple[RateLines, ...] = ()
    """The trainable tensors the optimizer's `param_group_overrides` put at another rate, by rate
    (sorted); none when every tensor trains at the base rate."""
    renames: Renames = Renames()
    """How the checkpoint's names became the stored ones (none: they are the checkpoint's)."""
    reach: tuple[ReachLines, ...] = ()
    """Per data mix of ``header.mixes``, the trainable tensors the loss never reaches."""

    @cached_property
    def unreachable(self) -> dict[str, frozenset[str]]:
        """Probed mix -> its unreachable trainable tensors, expanded (a mix not probed is absent)."""
        return {reach.mix: frozenset(expand_lines([line for group in reach.groups for line in group.lines]))
                for reach in self.reach if reach.method}

    @cached_property
    def rate_of(self) -> dict[str, tuple[float, float]]:
        """Tensor -> its ``(lr_mult, wd_mult)``, for the tensors not at ``(1, 1)``."""
        return {name: (rate.lr_mult, rate.wd_mult) for rate in self.rates for name in expand_lines(rate.lines)}

    @cached_property
    def frozen(self) -> frozenset[str]:
        """The names, expanded: only a changed snapshot's report needs them."""
        return frozenset(expand_lines(self.lines))

    @cached_property
    def adapters(self) -> frozenset[str]:
        """The adapter names, expanded (none without `peft:`)."""
        return frozenset(expand_lines(self.adapter_lines or ()))


_INT_FIELDS = {f.name for f in fields(SnapshotHeader) if f.type == "int"}
_OPTIONAL = frozenset({"divergence", "mixes"})
"""Header fields written only when they have a value."""


def render_snapshot(snapshot: Snapshot) -> str:
    """The file text; identical input gives identical bytes."""
    header = snapshot.header
    for value in (header.recipe, header.model_id, header.config, header.architecture, header.builder,
                  header.framework, header.transformers):
        _check_storable(value, header.recipe)
    for value in (header.divergence, header.mixes):
        if value:
            _check_storable(value, header.recipe)
    lines = [TITLE, f"format: {FORMAT_VERSION}"]
    lines += [f"{f.name}: {getattr(header, f.name)}" for f in fields(SnapshotHeader) if f.name not in _OPTIONAL
              or getattr(header, f.name)]
    lines.append(SEPARATOR)
    lines += snapshot.lines
    if snapshot.adapter_lines is not None:
        lines += [ADAPTERS_SECTION, *snapshot.adapter_lines]
    for rate in sorted(snapshot.rates, key=lambda rate: (rate.lr_mult, rate.wd_mult)):
        lines += [rate.title(), *rate.lines]
    for reach in snapshot.reach:
        _check_storable(reach.not_probed or reach.method, header.recipe)
        lines += [reach.title(), *reach.body()]
    if snapshot.renames.rules:
        _check_storable(snapshot.renames.source, header.recipe)
        lines += [f"{RENAMES_SECTION}: {snapshot.renames.source}", *snapshot.renames.lines()]
    return "\n".join(lines) + "\n"


def _check_storable(value: str, recipe: str | None) -> None:
    if _LINE_BREAKS & set(value) or not value:
        raise SnapshotError(f"cannot store {value!r} in a line-based snapshot", source=recipe)


FIDELITY = {"checkpoint": "published", "partial": "partial", "transformers-default": "default",
            "framework-default": "default"}
"""Registry provenance -> what a reviewer needs to know: are these the published checkpoint's values?"""


def describe_config_source(kind: str, provenance: str | None) -> str:
    """Where the config came from, and only what is known of it: ``registry (published)`` (the
    bundled entry says how faithful it is), ``configs (hub)`` or ``configs (hf-cache)`` (what
    `configs pull` recorded), ``configs (local)`` (a file placed by hand), ``hf-cache``, ``hub``,
    ``local``. A file from a cache or a folder may be a stand-in, so nothing else is called published."""
    if kind == "registry" and provenance is not None:
        return f"{kind} ({FIDELITY.get(provenance, provenance)})"
    if kind == "configs":
        return f"{kind} ({provenance or 'local'})"
    return kind


def body_lines(names: frozenset[str], *, recipe: str | None) -> tuple[str, ...]:
    """The stored form of ``names`` (frozen or adapter names); a name that cannot be stored is a
    :class:`SnapshotError`."""
    for name in names:
        _check_storable(name, recipe)
        if name.startswith(SEPARATOR):  # it would read back as a section line
            raise SnapshotError(f"cannot store {name!r}: a line starting with {SEPARATOR!r} starts a section", source=recipe)
    return tuple(compress_names(names))


def parse_snapshot(text: str, *, source: str | None = None) -> Snapshot:
    """Read back :func:`render_snapshot`'s text; anything else is a :class:`SnapshotError`."""
    head, separator, body = text.partition(f"\n{SEPARATOR}\n")
    if not separator:
        raise SnapshotError(f"no `{SEPARATOR}` line between header and names", source=source)
    values = _header_values(head.split("\n"), source=source)
    if values.pop("format", None) != str(FORMAT_VERSION):
        raise SnapshotError(f"not a format {FORMAT_VERSION} snapshot; regenerate it with --update", source=source)
    try:
        header = SnapshotHeader(**{k: int(v) if k in _INT_FIELDS else v for k, v in values.items()})
    except (TypeError, ValueError) as error:
        raise SnapshotError(f"bad header: {error}", source=source) from error
    sections = _body_sections(body.split("\n"), source=source)
    frozen = next(lines for kind, _, lines in sections if kind == SEPARATOR)
    adapters = next((lines for kind, _, lines in sections if kind == ADAPTERS_SECTION), None)
    rates = tuple(_rate_lines(match, lines, source=source) for kind, match, lines in sections if kind == RATE_SECTION)
    reach = tuple(_reach_lines(match, lines, source=source) for kind, match, lines in sections if kind == UNREACHABLE_SECTION)
    renamed = next(((title, lines) for kind, title, lines in sections if kind == RENAMES_SECTION), None)
    try:
        renames = Renames() if renamed is None else Renames(
            tuple(RenameRule.parse(line) for line in renamed[1]), renamed[0].partition(": ")[2])
    except ValueError as error:
        raise SnapshotError(f"{RENAMES_SECTION!r}: {error}", source=source) from error
    return Snapshot(header=header, lines=frozen, adapter_lines=adapters, rates=rates, renames=renames, reach=reach)


def _rate_lines(title: re.Match[str], lines: tuple[str, ...], *, source: str | None) -> RateLines:
    """A rate section, its multipliers held to the rule a recipe's optimizer section is held to."""
    rate = {name: float(title[key]) for name, key in (("lr_mult", "lr"), ("wd_mult", "wd"))}
    for name, value in rate.items():
        if (problem := multiplier_problem(value)) is not None:
            raise SnapshotError(f"{title[0]!r}: {name} {problem}; a recipe's optimizer section refuses it too",
                                source=source)
    return RateLines(lines=lines, **rate)


def check_counts(snapshot: Snapshot, *, source: str | None) -> None:
    """The header's frozen-tensor count against the names the file lists: a file cut short, or a
    header left without its names, is refused before anything relies on it."""
    listed = len(expand_lines(snapshot.lines))
    if listed != snapshot.header.frozen_tensors:
        raise SnapshotError(
            f"the header says {snapshot.header.frozen_tensors} frozen tensors, the names list {listed}: the file is "
            "cut short or was edited by hand; regenerate it with `mmfreeze snapshot --update RECIPE` and review it",
            source=source)


def _reach_lines(title: re.Match[str], lines: tuple[str, ...], *, source: str | None) -> ReachLines:
    groups: list[GroupLines] = []
    for line in lines:
        if line.startswith(GROUP_INDENT) and groups:
            last = groups[-1]
            groups[-1] = GroupLines(label=last.label, tensors=last.tensors, lines=(*last.lines, line[len(GROUP_INDENT):]))
            continue
        label, _, count = line.rpartition(": ")
        tensors = count.removesuffix(" tensors").removesuffix(" tensor").replace(",", "")
        if line.startswith(GROUP_INDENT) or not label or not tensors.isdigit():
            raise SnapshotError(f"{title[0]!r}: expected `<module>: <n> tensors` and its names indented by "
                                f"{len(GROUP_INDENT)} spaces, got {line!r}", source=source)
        groups.append(GroupLines(label=label, tensors=int(tensors), lines=()))
    return ReachLines(mix=title["mix"], method=title["method"] or "", not_probed=title["why"] or "", groups=tuple(groups))


def _body_sections(lines: list[str], *, source: str | None) -> list[tuple[str, Any, tuple[str, ...]]]:
    """(kind, title or rate match, lines) per section, the frozen names first (kind :data:`SEPARATOR`);
    the sections in :data:`SECTIONS` order, each once but for rates, one per rate."""
    starts = [index for index, line in enumerate(lines) if line.startswith(SEPARATOR)]
    found = [lines[index] for index in starts]
    kinds = [_section_kind(line) for line in found]
    order = [SECTIONS.index(kind) if kind in SECTIONS else -1 for kind in kinds]
    repeated = [kind for kind in set(kinds) if kind not in REPEATED and kinds.count(kind) > 1]
    if -1 in order or order != sorted(order) or repeated or len(set(found)) != len(found):
        shown = ", ".join(repr(line) for line in found)
        expected = (f"{ADAPTERS_SECTION!r}, {RATE_SECTION + ': lr_mult <x>, wd_mult <y>'!r} (one per rate), "
                    f"{UNREACHABLE_SECTION + ': <mix>, <method>: <n> tensors'!r} (one per mix) and "
                    f"{RENAMES_SECTION + ': <source>'!r}")
        raise SnapshotError(f"the names may be followed by {expected} sections, in that order and once each; found {shown}",
                            source=source)
    bounds = [-1, *starts, len(lines)]
    titles = {RATE_SECTION: _RATE_TITLE, UNREACHABLE_SECTION: _UNREACHABLE_TITLE}
    details = [None, *(titles[kind].match(line) if kind in titles else line for kind, line in zip(kinds, found))]
    return [(kind, detail, _names(lines[start + 1 : end]))
            for kind, detail, start, end in zip([SEPARATOR, *kinds], details, bounds, bounds[1:])]


def _section_kind(line: str) -> str:
    """Which section a separator line starts (the line itself when it is none of them)."""
    if line.startswith(f"{RENAMES_SECTION}: "):
        return RENAMES_SECTION
    if _RATE_TITLE.match(line):
        return RATE_SECTION
    if _UNREACHABLE_TITLE.match(line):
        return UNREACHABLE_SECTION
    return line


def _names(lines: list[str]) -> tuple[str, ...]:
    return tuple(line for line in lines if line.strip())


def _header_values(lines: list[str], *, source: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for line in lines:
        if line.startswith("#") or not line:
            continue
        key, colon, value = line.partition(": ")
        if not colon:
            raise SnapshotError(f"header line is not `key: value`: {line!r}", source=source)
        values[key] = value
    return values
