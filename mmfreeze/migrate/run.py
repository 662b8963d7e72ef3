"""A migration run: find files, plan every one (no writes), then write the changed ones atomically."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mmfreeze.exceptions import MmfreezeError, RecipeError
from mmfreeze.migrate.atomic import read_text_exact, resolve_write_target, write_atomic
from mmfreeze.migrate.python.prove import BoundModels
from mmfreeze.migrate.python_file import migrate_python
from mmfreeze.migrate.report import FileResult
from mmfreeze.migrate.section import Mode
from mmfreeze.migrate.yaml_file import ConfigOf, PlanModels, StructureOf, migrate_yaml
from mmfreeze.models.framework import BuilderChoice, choose_builder
from mmfreeze.models.loader import ModelRequest, find_config
from mmfreeze.models.structure import ModelStructure
from mmfreeze.recipes.discovery import RECIPE_SUFFIXES, iter_files
from mmfreeze.recipes.documents import YamlDocuments
from mmfreeze.recipes.recipe import display_path
from mmfreeze.boundary.releases import CURRENT_RULES, FrameworkRules

PYTHON_SUFFIXES = (".py",)


@dataclass(frozen=True, kw_only=True)
class MigrateOptions:
    mode: Mode = "preserve"
    disabled: frozenset[str] = frozenset()
    allowed_targets: Mapping[str, str]
    framework: FrameworkRules = CURRENT_RULES
    """The release the repository trains on, whose rules read its framework-vocabulary sections."""
    builder: BuilderChoice = field(default_factory=lambda: choose_builder("transformers"))
    """The repository's builder: rewrites are proven, and sections compiled, on the model it builds."""
    world_size: int | None = None
    """``[tool.mmfreeze] world_size``: the ranks a change's cost is stated at (else the recipe's sizes)."""
    config_of: ConfigOf = field(default=lambda request: find_config(request).config)
    """A requested model's config.json content (the repository's config folder included, when the
    caller knows it): it says whether the framework trains its own class, which a cost must know."""


def find_migratable(paths: Iterable[Path]) -> list[Path]:
    """YAML recipes and Python files under ``paths`` (VCS data, environments and build folders skipped)."""
    return list(iter_files(paths, RECIPE_SUFFIXES + PYTHON_SUFFIXES))


def plan_files(
    files: Iterable[Path], options: MigrateOptions, structure_of: StructureOf,
    progress: Callable[[Path], None] = lambda _: None, *, documents: YamlDocuments | None = None,
) -> list[FileResult]:
    """Every file's migrated text and report; nothing is written. ``documents``: the run's parsed
    YAML, round-trip (the one that decided which files are recipes); each file is parsed once.
    Models bound by Python call sites are built once for the whole run."""
    documents = documents if documents is not None else YamlDocuments(roundtrip=True)
    structure_of = _once_per_request(structure_of)
    bound = BoundModels(structure_of, options.allowed_targets, options.framework, options.builder)
    models = PlanModels(structure_of=structure_of, allowed_targets=options.allowed_targets,
                        framework=options.framework, builder=options.builder, world_size=options.world_size,
                        config_of=options.config_of)
    return [_plan_file(path, options, documents, models, bound) for path in files if progress(path) is None]


def _once_per_request(structure_of: StructureOf) -> StructureOf:
    """``structure_of`` asked once per distinct request in a run: a recipe's rules plan and compile
    on the same model, and a build that fails fails again."""
    found: dict[ModelRequest, ModelStructure | MmfreezeError] = {}

    def once(request: ModelRequest) -> ModelStructure:
        if request not in found:
            try:
                found[request] = structure_of(request)
            except MmfreezeError as error:
                found[request] = error
        result = found[request]
        if isinstance(result, MmfreezeError):
            raise result
        return result

    return once


def _plan_file(
    path: Path, options: MigrateOptions, documents: YamlDocuments, models: PlanModels, bound: BoundModels,
) -> FileResult:
    display = display_path(path)
    if path.suffix in PYTHON_SUFFIXES:
        try:
            text = read_text_exact(path)
        except (OSError, UnicodeDecodeError) as error:
            return FileResult(display=display, old_text="", new_text="", status="skipped", error=f"cannot read: {error}")
        return migrate_python(text, display=display, disabled=options.disabled, directory=path.parent, models=bound)
    try:
        file = documents.file(path)
    except RecipeError as error:
        return FileResult(display=display, old_text="", new_text="", status="skipped", error=str(error))
    return migrate_yaml(path, file, display=display, mode=options.mode, disabled=options.disabled, models=models,
                        documents=documents)


def write_changed(
    files: Iterable[Path], results: Iterable[FileResult], *, root: Path | None = None
) -> list[MmfreezeError]:
    """Write each changed file atomically; a failed write is returned, the others still happen.

    A symbolic link stays a link: the file it resolves to is written (once, when both the link and
    its target are among ``files``) when it lies inside the repository ``root`` (default: each
    link's own), and refused otherwise (:func:`~mmfreeze.migrate.atomic.resolve_write_target`)."""
    errors = []
    written: set[Path] = set()
    for path, result in zip(files, results, strict=True):
        if not result.changed:
            continue
        try:
            target = resolve_write_target(path, root, display=result.display)
            if target not in written:
                write_atomic(target, result.new_text)
                written.add(target)
        except MmfreezeError as error:
            errors.append(error)
    return errors


def is_failure(result: FileResult, *, strict: bool) -> bool:
    """A skipped file always fails the run; unrewritten Python sites fail it under ``--strict``."""
    return result.status == "skipped" or (strict and bool(result.findings))
