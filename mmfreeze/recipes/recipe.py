"""Load one recipe: parse the YAML, read its `model:` section, keep the rest as plain data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from mmfreeze.exceptions import MmfreezeError, RecipeError
from mmfreeze.recipes.compiled import CompiledSections, as_framework_reads, read_layout
from mmfreeze.recipes.composite import COMPOSITE_TARGETS, DrafterSection, parse_drafter
from mmfreeze.recipes.interpolation import resolve_references
from mmfreeze.recipes.multimodal import ModuleOverride, read_module_overrides
from mmfreeze.recipes.targets import DEFAULT_TARGETS, resolve_auto_class
from mmfreeze.releases import CURRENT_RULES, FrameworkRules

if TYPE_CHECKING:
    from mmfreeze.recipes.documents import YamlDocuments


TRAINABILITY_SECTIONS = ("freeze_config", "peft", "multimodal")
"""The recipe sections that decide what trains (with the model): the frozen-set engine reads
these and nothing else, so they key its cache."""


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
    with the reviewed source in the place of what was compiled from it (:mod:`mmfreeze.recipes.compiled`)."""

    path: Path
    display_path: str
    """The path as the user should read it in messages: relative to the repository root when the
    recipe was loaded for one, else to the working directory, where possible."""
    document: Mapping[str, Any]
    model: ModelSection
    configs_dir: Path | None = None
    """The repository's model-config folder (``[tool.mmfreeze] configs``), searched for the model's
    config after a local directory and before the bundled registry."""
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
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RecipeError(f"cannot read: {error}", source=shown) from error
    return parse_yaml_text(text, source=shown)


def parse_yaml_text(
    text: str, *, source: str, typ: str = "safe", error_type: type[MmfreezeError] = RecipeError
) -> Any:
    """Parse YAML text (``typ="rt"`` keeps comments and positions); a syntax error names file:line.

    Plain-data loads use libyaml's parser (ruamel.yaml.clib, about 4x faster on recipes); the
    constructor stays ruamel's, so YAML 1.2 semantics and duplicate-key errors are the same.
    """
    try:
        return YAML(typ=typ, pure=typ != "safe").load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise error_type(f"YAML does not parse: {error.problem or error.context}", source=where) from error
    except YAMLError as error:
        raise error_type(f"YAML does not parse: {error}", source=source) from error


def load_recipe(
    path: Path, *, allowed_targets: Mapping[str, str] = DEFAULT_TARGETS, root: Path | None = None,
    configs_dir: Path | None = None, documents: YamlDocuments | None = None, framework: FrameworkRules = CURRENT_RULES,
) -> Recipe:
    """Read ``path`` and validate its `model:` section.

    ``root``: the repository root messages name the file from (default: the working directory);
    ``configs_dir``: the repository's model-config folder; ``documents``: the run's parsed YAML,
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
        framework=framework,
        compiled=layout.compiled,
    )


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
