"""Load one recipe: parse the YAML, read its `model:` section, keep the rest as plain data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML, events
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from mmfreeze.exceptions import MmfreezeError, RecipeError, first_line
from mmfreeze.recipes.layout import CompiledSections, as_framework_reads, read_layout
from mmfreeze.recipes.composite import COMPOSITE_TARGETS, DrafterSection, parse_drafter
from mmfreeze.recipes.interpolation import resolve_references
from mmfreeze.recipes.multimodal import ModuleOverride, read_module_overrides
from mmfreeze.recipes.targets import DEFAULT_TARGETS, resolve_auto_class
from mmfreeze.regular_files import RECIPE_LIMIT, read_regular
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules
from mmfreeze.settings import LocalModels

if TYPE_CHECKING:
    from mmfreeze.recipes.documents import YamlDocuments


TRAINABILITY_SECTIONS = ("freeze_config", "peft", "multimodal")
"""The recipe sections that decide what trains (with the model): the frozen-set engine reads
these and nothing else, so they key its cache."""
MAX_YAML_DEPTH = 64
"""How deep a YAML file may nest collections, aliases expanded (the bundled recipes nest 6 deep).
The loaders recurse once per level: ruamel's pure composer (round-trip loads) runs out of
Python stack near 250 levels, libyaml's C composer out of C stack (a segfault) near 100,000."""
MAX_ALIAS_NODES = 10_000
"""How many nodes all the aliases of a YAML file may add to its document, each counted expanded
(an alias of an anchored list of 5 scalars adds 6). A recipe's `<<: *defaults` adds a few dozen;
an alias bomb (anchors of anchors, "billion laughs") adds billions."""


@dataclass(frozen=True, kw_only=True)
class ModelSection:
    """What a recipe says about the model to build."""

    target: str
    """The `_target_` string, as written (never imported)."""
    auto_class: str
    """The transformers Auto class the target maps to, e.g. ``AutoModelForImageTextToText``."""
    model_id: str
    """`pretrained_model_name_or_path` with `${...}` references resolved."""
    drafter: DrafterSection | None = None
    """A composite target's drafter (``Gemma4WithDrafter``); ``model_id`` is then its base."""


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """A parsed training recipe. ``document`` is the whole YAML as plain data (anchors resolved),
    with the reviewed source in the place of what was compiled from it (:mod:`mmfreeze.recipes.layout`)."""

    path: Path
    display_path: str
    """The path as the user should read it in messages: relative to the repository root when the
    recipe was loaded for one, else to the working directory, where possible."""
    document: Mapping[str, Any]
    model: ModelSection
    configs_dir: Path | None = None
    """The repository's model-config folder (``[tool.mmfreeze] configs``), searched for the model's
    config after a local directory and before the bundled registry."""
    local_models: LocalModels | None = None
    """Where its local model directory may be (the repository, ``[tool.mmfreeze.model_folders]``)."""
    framework: FrameworkRules = CURRENT_RULES
    """The nemo-automodel release the repository trains on, whose rules read its `freeze_config`."""
    compiled: CompiledSections | None = None
    """The sections `mmfreeze migrate` compiled from the source for the release (``None``: not compiled)."""

    @property
    def freeze_config(self) -> Any:
        """The `freeze_config` section, or ``None`` when the recipe has none (not the same as ``{}``)."""
        return self.document.get("freeze_config")

    @property
    def framework_document(self) -> Mapping[str, Any]:
        """The document as the framework reads the file: compiled sections where the source sits in ``document``."""
        return as_framework_reads(self.document, self.compiled)

    @property
    def peft(self) -> Mapping[str, Any] | None:
        return self.document.get("peft")

    @property
    def distributed(self) -> Mapping[str, Any] | None:
        return self.document.get("distributed")

    @property
    def module_overrides(self) -> tuple[ModuleOverride, ...]:
        """The validated `multimodal.modules` overrides (read on use: a recipe whose section is
        malformed still loads, and the step that needs the overrides reports it)."""
        return read_module_overrides(self.document, source=self.display_path)


def display_path(path: Path, root: Path | None = None) -> str:
    """``path`` relative to ``root`` (default: the working directory) when it lies below it, else as given."""
    relative = relative_path(path, root or Path.cwd())
    return str(path) if relative is None else str(relative)


def relative_path(path: Path, base: Path) -> Path | None:
    """``path`` relative to ``base``, or ``None`` when it lies elsewhere. Lexical when it can be
    (no file-system calls: discovery asks for every file), through symbolic links otherwise."""
    absolute = path.absolute()
    if ".." not in absolute.parts:
        try:
            return absolute.relative_to(base.absolute())
        except ValueError:
            pass
    try:
        return path.resolve().relative_to(base.resolve())
    except ValueError:
        return None


def read_yaml(path: Path, *, shown: str | None = None) -> Any:
    """Parse ``path`` as plain data; a syntax error names file:line (``shown``, default :func:`display_path`)."""
    shown = shown or display_path(path)
    return parse_yaml_text(read_exact_text(path, shown=shown), source=shown)


def read_exact_text(path: Path, *, shown: str) -> str:
    """The text of the regular file at ``path``, line endings as they are, at most
    :data:`~mmfreeze.regular_files.RECIPE_LIMIT` bytes: a pipe or a device is refused unread."""
    try:
        return read_regular(path, limit=RECIPE_LIMIT).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RecipeError(f"cannot read: {error}", source=shown) from error


def parse_yaml_text(
    text: str, *, source: str, typ: str = "safe", error_type: type[MmfreezeError] = RecipeError
) -> Any:
    """Parse YAML text (``typ="rt"`` keeps comments and positions); a syntax error names file:line.

    Plain-data loads use libyaml's parser (ruamel.yaml.clib, about 4x faster on recipes); the
    constructor stays ruamel's, so YAML 1.2 semantics and duplicate-key errors are the same.
    """
    check_yaml_bounds(text, source=source, error_type=error_type)
    try:
        return YAML(typ=typ, pure=typ != "safe").load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise error_type(f"YAML does not parse: {error.problem or error.context}", source=where) from error
    except YAMLError as error:
        raise error_type(f"YAML does not parse: {error}", source=source) from error
    except (ValueError, TypeError, LookupError) as error:  # ruamel's constructors: `2024-13-45`, `!!int x`, `? {a: b}`
        raise error_type(f"YAML does not load: a value cannot be built ({type(error).__name__}: {first_line(error)})",
                         source=source) from error
    except RecursionError as error:  # check_yaml_bounds refuses what nests this deep: never expected
        raise error_type(f"YAML nests too deep to load ({first_line(error)})", source=source) from error


def check_yaml_bounds(text: str, *, source: str, error_type: type[MmfreezeError] = RecipeError) -> None:
    """Refuse, before any loader builds a node, YAML that nests deeper than :data:`MAX_YAML_DEPTH`
    or whose aliases add more than :data:`MAX_ALIAS_NODES` nodes (or refer to themselves).

    Text without an anchor (``&``) and well inside the depth bound (:func:`text_depth_bound`, almost
    every recipe) needs no more. Otherwise the check is exact: libyaml's event stream (no
    recursion, no nodes built), stopped at the first excess. Where libyaml finds a syntax error,
    ruamel's pure parser (which round-trip loads use, and which may read further) is scanned too;
    where that fails as well, the loader reports the error at the same place, having built only
    what was scanned.
    """
    if "&" not in text and text_depth_bound(text) <= MAX_YAML_DEPTH:
        return
    for pure in (False, True):
        try:
            _scan_events(YAML(typ="safe", pure=pure).parse(text), source=source, error_type=error_type)
            return
        except YAMLError:
            continue


def text_depth_bound(text: str) -> int:
    """An upper bound on how deep ``text`` nests, read from the characters alone.

    A block collection nested in another starts at a greater column, but for a sequence written
    at its key's indentation: so a path of block collections has at most two per column up to the
    column of its innermost parent. A parent's column is at most the leading run of blanks and
    ``-``, ``?``, ``:`` indicators of the line its child starts on (node properties can precede
    only a mapping, and only the innermost collection on a line), so at most ``C``, the longest
    such run, and the path is at most ``2 * C + 4`` deep. Flow collections, innermost, add at most
    one level per ``{`` and two per ``[`` (a sequence, and the single-pair mapping an entry
    ``k: v`` makes in it). Lines are split as YAML 1.1 splits them (and more)."""
    run = max((len(line) - len(line.lstrip(" \t-?:\ufeff")) for line in text.splitlines()), default=0)
    return 2 * run + 4 + 2 * text.count("[") + text.count("{")


class _Node:
    """A collection being read: its anchor, and its size and height, aliases expanded."""

    __slots__ = ("anchor", "nodes", "height")

    def __init__(self, anchor: str | None) -> None:
        self.anchor, self.nodes, self.height = anchor, 1, 1

    def add(self, nodes: int, height: int) -> None:
        self.nodes += nodes
        self.height = max(self.height, height + 1)


def _scan_events(stream: Any, *, source: str, error_type: type[MmfreezeError]) -> None:
    open_nodes: list[_Node] = []
    anchored: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, height) of the node it names
    added = 0
    for event in stream:
        if isinstance(event, events.DocumentStartEvent):
            anchored.clear()  # anchors are per document
        elif isinstance(event, events.CollectionStartEvent):
            open_nodes.append(_Node(event.anchor))
            _check_depth(len(open_nodes), event, source, error_type)
        elif isinstance(event, events.CollectionEndEvent):
            node = open_nodes.pop()
            if node.anchor is not None:
                anchored[node.anchor] = (node.nodes, node.height)
            if open_nodes:
                open_nodes[-1].add(node.nodes, node.height)
        elif isinstance(event, events.ScalarEvent):
            if event.anchor is not None:
                anchored[event.anchor] = (1, 0)
            if open_nodes:
                open_nodes[-1].add(1, 0)
        elif isinstance(event, events.AliasEvent):
            if any(node.anchor == event.anchor for node in open_nodes):
                raise error_type(f"the YAML alias *{event.anchor} names a node that contains it: a recursive "
                                 "document cannot be a recipe", source=_at(event, source))
            nodes, height = anchored.get(event.anchor, (1, 0))  # an undefined anchor: the loader says so
            added += nodes
            if added > MAX_ALIAS_NODES:
                raise error_type(f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes (here *{event.anchor} "
                                 f"adds {nodes:,}): an alias bomb is refused before it is expanded; write the "
                                 "repeated part out, or alias less", source=_at(event, source))
            _check_depth(len(open_nodes) + height, event, source, error_type)
            if open_nodes:
                open_nodes[-1].add(nodes, height)


def _at(event: Any, source: str) -> str:
    """``file:line`` of an event (its start)."""
    return f"{source}:{event.start_mark.line + 1}" if event.start_mark is not None else source


def _check_depth(depth: int, event: Any, source: str, error_type: type[MmfreezeError]) -> None:
    if depth > MAX_YAML_DEPTH:
        raise error_type(f"YAML nests deeper than {MAX_YAML_DEPTH} levels (aliases expanded): refused before a "
                         "parser recurses into it; a recipe nests a few levels", source=_at(event, source))


def load_recipe(
    path: Path, *, allowed_targets: Mapping[str, str] = DEFAULT_TARGETS, root: Path | None = None,
    configs_dir: Path | None = None, local_models: LocalModels | None = None, documents: YamlDocuments | None = None,
    framework: FrameworkRules = CURRENT_RULES,
) -> Recipe:
    """Read ``path`` and validate its `model:` section.

    ``root``: the repository root messages name the file from (default: the working directory);
    ``configs_dir``: the repository's model-config folder; ``local_models``: where a local model
    directory may be; ``documents``: the run's parsed YAML,
    so a file discovery already read is not parsed again; ``framework``: the repository's release.
    """
    shown = display_path(path, root)
    document = documents.read(path) if documents is not None else read_yaml(path, shown=shown)
    if not isinstance(document, Mapping):
        raise RecipeError("a recipe is a YAML mapping at the top level", source=shown)
    layout = read_layout(document, source=shown)
    return Recipe(
        path=path,
        display_path=shown,
        document=layout.document,
        model=_model_section(document, allowed_targets, source=shown),
        configs_dir=configs_dir,
        local_models=local_models,
        framework=framework,
        compiled=layout.compiled,
    )


TEACHER = "teacher_model"
TEACHER_FREEZE = "teacher_freeze_config"


def teacher_recipe(recipe: Recipe, *, allowed_targets: Mapping[str, str] = DEFAULT_TARGETS) -> Recipe | None:
    """A knowledge-distillation recipe's teacher as a recipe of its own (``None`` without
    `teacher_model`): the framework builds it with the same ``build_model`` as the student
    (``recipes/vlm/kd.py``), from `teacher_model`, with `teacher_freeze_config` as its `freeze_config`,
    no PEFT, on the student's `distributed` section. Errors name the teacher's keys."""
    section = recipe.document.get(TEACHER)
    if section is None:
        return None
    document = {"model": section, "distributed": recipe.document.get("distributed"),
                **({"freeze_config": recipe.document[TEACHER_FREEZE]} if TEACHER_FREEZE in recipe.document else {})}
    try:
        model = _model_section(document, allowed_targets, source=recipe.display_path)
    except RecipeError as error:
        raise RecipeError(error.message, source=error.source, key=teacher_key(error.key)) from error
    return replace(recipe, document=document, model=model, compiled=None)


def teacher_key(key: str | None) -> str | None:
    """A key of the teacher's own recipe (:func:`teacher_recipe`) as the distillation recipe spells it:
    ``model.torch_dtype`` is ``teacher_model.torch_dtype``; its other keys are the recipe's own."""
    if key is not None and (key == "model" or key.startswith("model.")):
        return TEACHER + key.removeprefix("model")
    return key


def read_model_id(document: Any, *, source: str) -> str:
    """The model id a recipe document names (``${...}`` resolved), without validating its `_target_`."""
    if not isinstance(document, Mapping):
        raise RecipeError("a recipe is a YAML mapping at the top level", source=source)
    return _model_id(_model_mapping(document, source=source), source=source)


def _model_mapping(document: Mapping[str, Any], *, source: str) -> Mapping[str, Any]:
    section = document.get("model")
    if not isinstance(section, Mapping):
        found = "no `model:` section" if section is None else f"`model:` is a {type(section).__name__}"
        raise RecipeError(
            f"{found}; a recipe needs `model:` with `_target_` and `pretrained_model_name_or_path`",
            source=source,
        )
    return section


def _model_section(document: Mapping[str, Any], allowed: Mapping[str, str], *, source: str) -> ModelSection:
    section = _model_mapping(document, source=source)
    target = section.get("_target_")
    if not isinstance(target, str):
        raise RecipeError("missing or non-string `_target_`", source=source, key="model._target_")
    composite = target in COMPOSITE_TARGETS
    return ModelSection(
        target=target,
        auto_class=resolve_auto_class(target, allowed, source=source),
        model_id=_model_id(section, source=source),
        drafter=parse_drafter(section, document, source=source) if composite else None,
    )


def _model_id(section: Mapping[str, Any], *, source: str) -> str:
    """``model.pretrained_model_name_or_path``, or for a ``from_config`` recipe
    ``model.config.pretrained_model_name_or_path``, where nemo-automodel reads it too
    (``recipes/_typed_config.py``, ``_model_name_from_cfg``)."""
    key = "model.pretrained_model_name_or_path"
    model_id = section.get("pretrained_model_name_or_path")
    if section.get("_target_") in COMPOSITE_TARGETS and section.get("base_path") is not None:
        key, model_id = "model.base_path", section["base_path"]  # the composite's name; the other is its alias
    config = section.get("config")
    if model_id is None and isinstance(config, Mapping) and "pretrained_model_name_or_path" in config:
        key, model_id = "model.config.pretrained_model_name_or_path", config["pretrained_model_name_or_path"]
    if not isinstance(model_id, str) or not model_id.strip():
        raise RecipeError(
            "missing `pretrained_model_name_or_path` (a model id such as Qwen/Qwen2.5-VL-7B-Instruct "
            "or a local directory holding config.json), under `model:` or, for a from_config recipe, "
            "under `model.config:`",
            source=source,
            key=key,
        )
    return resolve_references(model_id, source=source, key=key)
