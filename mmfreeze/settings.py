"""Repository settings: the ``[tool.mmfreeze]`` table of the repository's ``pyproject.toml``.

Parsed and validated here only, once per command, into a frozen :class:`Settings`; every other
module receives typed values. Command-line options override them (:meth:`Settings.overridden`).

```toml
[tool.mmfreeze]
configs = "model_configs"            # <org>/<name>/config.json per model id (`mmfreeze configs pull`)
exclude = ["recipes/experimental/**", "recipes/custom_code_*.yaml"]
snapshots = "ci/snapshots"           # default "snapshots"
builder = "auto"                     # or "framework", "transformers" (mmfreeze.models.framework)
builder_fallback = "none"            # or "transformers": build it when the framework's class cannot be
world_size = 8                       # ranks `mmfreeze explain` sizes per-rank memory for
[tool.mmfreeze.allow_targets]
"my_pkg.MyVLM.from_pretrained" = "AutoModelForImageTextToText"
[tool.mmfreeze.model_folders]        # local model directories outside the repository, named in words
shared = "/mnt/models"
```

The repository root (:func:`find_root`) is what every relative path above, every recipe key and
every snapshot path is relative to, so a command gives the same result from any folder.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from mmfreeze.exceptions import ConfigSourceError, SettingsError
from mmfreeze.boundary.releases import RELEASES, Release
from mmfreeze.suggest import did_you_mean

BuilderSetting = Literal["auto", "framework", "transformers"]
"""``builder`` / ``--builder`` (what each means: :mod:`mmfreeze.models.framework`)."""
FallbackSetting = Literal["none", "transformers"]
"""``builder_fallback`` / ``--builder-fallback``."""
BUILDER_SETTINGS: tuple[str, ...] = get_args(BuilderSetting)
FALLBACK_SETTINGS: tuple[str, ...] = get_args(FallbackSetting)

PYPROJECT = "pyproject.toml"
TABLE = "tool.mmfreeze"
DEFAULT_SNAPSHOTS = "snapshots"
VERBOSE_ENV = "MMFREEZE_VERBOSE"
"""Set by `mmfreeze --verbose` (build workers inherit it): show what dependencies print as they import."""
REPOSITORY_MARKERS = (".git", ".hg")
"""A folder holding one of these is a repository root: the search for settings stops there."""


@dataclass(frozen=True, kw_only=True)
class LocalModels:
    """Where a recipe's local model directory may be read: inside the repository, or in a folder
    ``[tool.mmfreeze.model_folders]`` names in words (``shared = "/mnt/models"``). A snapshot names
    such a model relative to one of them, never by an absolute path."""

    root: Path
    folders: Mapping[str, Path] = field(default_factory=dict)
    """Setting name -> an absolute folder outside the repository that may be read."""

    def __hash__(self) -> int:  # a model request carries it, and a run builds each request once
        return hash((self.root, tuple(sorted(self.folders.items()))))

    def label(self, directory: Path, *, model_id: str, recipe_dir: Path | None, source: str | None) -> str:
        """How a snapshot names the model in ``directory``: ``./<path>`` from the repository root,
        or ``<name>:<path>`` inside the folder a setting names; anything else is refused. A recipe
        that lies outside the repository itself (no repository was found for it) may read below
        its own folder, named from there."""
        resolved = directory.resolve()
        for base in (self.root, *([recipe_dir] if recipe_dir is not None and self._outside(recipe_dir) else [])):
            if resolved.is_relative_to(base.resolve()):
                return "./" + resolved.relative_to(base.resolve()).as_posix()
        for name, folder in sorted(self.folders.items()):
            if resolved.is_relative_to(folder.resolve()):
                return f"{name}:{resolved.relative_to(folder.resolve()).as_posix()}"
        named = f"the folders [tool.mmfreeze.model_folders] names ({', '.join(sorted(self.folders))})" if self.folders \
            else "any folder [tool.mmfreeze.model_folders] names"
        raise ConfigSourceError(
            f"{model_id!r} is a model folder at {resolved}, outside the repository {self.root} and {named}; nothing "
            f"was read. To read it, name its folder in words: [tool.mmfreeze.model_folders] models = "
            f"\"{resolved.parent}\"", source=source, key="model.pretrained_model_name_or_path")

    def _outside(self, folder: Path) -> bool:
        return not folder.resolve().is_relative_to(self.root.resolve())


@dataclass(frozen=True, kw_only=True)
class Settings:
    """One repository's settings, every path absolute."""

    root: Path
    """The repository root (:func:`find_root`): recipe keys, snapshot paths and the relative
    paths below are relative to it, whatever the current directory."""
    pyproject: Path | None = None
    """The ``pyproject.toml`` the settings were read from; ``None`` when defaults apply."""
    configs: Path | None = None
    """``configs``: the folder of model configs, ``<org>/<name>/config.json`` per model id,
    searched after a recipe's local directory and before the bundled registry."""
    exclude: tuple[str, ...] = ()
    """``exclude``: globs of recipe paths relative to the root (``**`` spans folders; a glob that
    matches a folder excludes everything below it)."""
    allow_targets: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """``allow_targets``: extra ``model._target_`` -> transformers Auto class entries."""
    snapshots: Path
    """``snapshots``: the snapshot folder (default ``snapshots`` under the root)."""
    builder: BuilderSetting = "auto"
    """``builder``: what builds the models: ``framework`` (NeMo AutoModel's own class where it has
    one), ``transformers``, or ``auto`` (the framework when it is installed with the transformers
    it requires)."""
    framework: Release | None = None
    """``framework``: the nemo-automodel release the repository trains on (``"0.7"`` or ``"0.6"``),
    whose rules every recipe's frozen set follows; unset: the installed one's, else the newest."""
    builder_fallback: FallbackSetting = "none"
    """``builder_fallback``: ``transformers`` builds the transformers class where the framework's
    cannot be built on meta (the snapshot header says why); ``none`` makes that an input error."""
    model_folders: Mapping[str, Path] = field(default_factory=lambda: MappingProxyType({}))
    """``[tool.mmfreeze.model_folders]``: name -> a folder outside the repository whose model
    directories recipes may name (``shared = "/mnt/models"``); snapshots name such a model
    ``shared:<path>``. Without it, a local model directory must lie inside the repository."""
    world_size: int | None = None
    """``world_size``: the number of ranks `mmfreeze explain` sizes per-rank memory for when
    ``--world-size`` is not given (unset: the recipe's distributed sizes, when they state it)."""

    @property
    def local_models(self) -> LocalModels:
        """Where a recipe's local model directory may be read."""
        return LocalModels(root=self.root, folders=self.model_folders)

    def overridden(
        self, *, configs: Path | None = None, snapshots: Path | None = None,
        allow_targets: Iterable[tuple[str, str]] = (), builder: BuilderSetting | None = None,
        builder_fallback: FallbackSetting | None = None,
    ) -> Settings:
        """These settings with command-line values on top. Paths given on the command line are
        relative to the current directory, as every command-line path is."""
        return replace(
            self,
            configs=configs.absolute() if configs is not None else self.configs,
            snapshots=snapshots.absolute() if snapshots is not None else self.snapshots,
            allow_targets=MappingProxyType({**self.allow_targets, **dict(allow_targets)}),
            builder=builder or self.builder,
            builder_fallback=builder_fallback or self.builder_fallback,
        )

    def describe(self, key: str) -> str:
        """How a message names a setting: ``[tool.mmfreeze] exclude``."""
        return f"[{TABLE}] {key}"


def find_settings(paths: Sequence[Path] = (), *, cwd: Path | None = None) -> Settings:
    """The settings that apply to ``paths`` (the current directory when there are none)."""
    cwd = (cwd or Path.cwd()).absolute()
    root, pyproject = find_root(_start_folder(paths, cwd), cwd=cwd)
    if pyproject is None:
        return default_settings(root)
    return parse_settings(_read_table(pyproject) or {}, root=root, pyproject=pyproject)


def find_root(start: Path, *, cwd: Path) -> tuple[Path, Path | None]:
    """The repository root above ``start`` and the ``pyproject.toml`` holding its settings.

    Walking up from ``start``: the first folder whose ``pyproject.toml`` has a ``[tool.mmfreeze]``
    table (the settings' file), or else the first that is a repository root (``.git`` or ``.hg``;
    the walk never leaves a repository). Outside any repository, the nearest folder with a
    ``pyproject.toml``; failing that, ``cwd``.
    """
    nearest_pyproject: Path | None = None
    for folder in (start, *start.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file():
            if _read_table(candidate) is not None:
                return folder, candidate
            nearest_pyproject = nearest_pyproject or folder
        if any((folder / marker).exists() for marker in REPOSITORY_MARKERS):
            return folder, None
    return (nearest_pyproject or cwd), None


def default_settings(root: Path) -> Settings:
    return Settings(root=root, snapshots=root / DEFAULT_SNAPSHOTS)


def parse_settings(table: Mapping[str, Any], *, root: Path, pyproject: Path | None = None) -> Settings:
    """Validate a ``[tool.mmfreeze]`` table; an error names the file, the key and what is valid."""
    source = str(pyproject) if pyproject is not None else PYPROJECT
    unknown = sorted(set(table) - set(_PARSERS))
    if unknown:
        key = unknown[0]
        raise SettingsError(
            f"unknown setting{did_you_mean(key, _PARSERS)}; valid settings: {', '.join(sorted(_PARSERS))}",
            source=source, key=f"{TABLE}.{key}",
        )
    values = {name: parse(table[name], root=root, source=source) for name, parse in _PARSERS.items() if name in table}
    return replace(default_settings(root), pyproject=pyproject, **values)


def _start_folder(paths: Sequence[Path], cwd: Path) -> Path:
    """The deepest existing folder containing every path (a file counts as its folder)."""
    if not paths:
        return cwd
    return Path(os.path.commonpath([_existing_folder(cwd / path) for path in paths]))


def _existing_folder(path: Path) -> Path:
    path = path.resolve()
    while not path.is_dir() and path != path.parent:
        path = path.parent
    return path


def _read_table(pyproject: Path) -> Mapping[str, Any] | None:
    """The ``[tool.mmfreeze]`` table, or ``None`` when the file has none."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"cannot read: {error}", source=str(pyproject)) from error
    if "mmfreeze" not in text:  # most pyproject files: no need to parse them
        return None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"not valid TOML: {error}", source=str(pyproject)) from error
    table = document.get("tool", {}).get("mmfreeze")
    if table is not None and not isinstance(table, Mapping):
        raise SettingsError("must be a table", source=str(pyproject), key=TABLE)
    return table


def _folder(name: str) -> Any:
    def parse(value: Any, *, root: Path, source: str) -> Path:
        if not isinstance(value, str) or not value.strip():
            raise SettingsError(
                f"expected a folder path relative to the repository root, e.g. {name} = \"{_EXAMPLES[name]}\"; "
                f"got {value!r}", source=source, key=f"{TABLE}.{name}",
            )
        folder = (root / Path(value).expanduser()).absolute()
        if not folder.resolve().is_relative_to(root.resolve()):
            raise SettingsError(
                f"{value!r} resolves to {folder.resolve()}, outside the repository {root}: a setting names a folder "
                f"inside it, e.g. {name} = \"{_EXAMPLES[name]}\" (a folder elsewhere can be given on the command "
                f"line, --{'snapshot-dir' if name == 'snapshots' else name})", source=source, key=f"{TABLE}.{name}",
            )
        return folder
    return parse


def _exclude(value: Any, *, root: Path, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise SettingsError(
            f"expected a list of globs relative to the repository root, e.g. exclude = [\"recipes/experimental/**\"]; "
            f"got {value!r}", source=source, key=f"{TABLE}.exclude",
        )
    return tuple(value)


def _allow_targets(value: Any, *, root: Path, source: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise SettingsError(
            "expected a table of `_target_` = \"AutoModelFor...\" entries, e.g. "
            "[tool.mmfreeze.allow_targets] \"my_pkg.MyVLM.from_pretrained\" = \"AutoModelForImageTextToText\"; "
            f"got {value!r}", source=source, key=f"{TABLE}.allow_targets",
        )
    for target, auto_class in value.items():
        if not isinstance(auto_class, str) or not auto_class.startswith("AutoModel"):
            raise SettingsError(
                f"expected a transformers Auto class name (AutoModelForImageTextToText, AutoModelForCausalLM, ...); "
                f"got {auto_class!r}", source=source, key=f"{TABLE}.allow_targets.{target}",
            )
    return MappingProxyType(dict(value))


def _model_folders(value: Any, *, root: Path, source: str) -> Mapping[str, Path]:
    if not isinstance(value, Mapping) or not all(
        isinstance(name, str) and _FOLDER_NAME.fullmatch(name) and isinstance(folder, str) and folder.strip()
        for name, folder in value.items()
    ):
        raise SettingsError(
            "expected a table of name = \"folder\" entries naming model folders outside the repository, e.g. "
            f"[tool.mmfreeze.model_folders] shared = \"/mnt/models\" (names: letters, digits, - and _); got {value!r}",
            source=source, key=f"{TABLE}.model_folders",
        )
    return MappingProxyType({name: (root / Path(folder).expanduser()).absolute() for name, folder in value.items()})


_FOLDER_NAME = re.compile(r"[A-Za-z][\w-]*")


def _choice(name: str, valid: tuple[str, ...]) -> Any:
    def parse(value: Any, *, root: Path, source: str) -> str:
        if value not in valid:
            raise SettingsError(
                f"expected one of {', '.join(repr(v) for v in valid)}; got {value!r}", source=source, key=f"{TABLE}.{name}"
            )
        return value
    return parse


def _world_size(value: Any, *, root: Path, source: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SettingsError(f"expected a positive number of ranks, e.g. world_size = 8; got {value!r}",
                            source=source, key=f"{TABLE}.world_size")
    return value


_EXAMPLES = {"configs": "model_configs", "snapshots": DEFAULT_SNAPSHOTS}
_PARSERS = {
    "allow_targets": _allow_targets,
    "builder": _choice("builder", BUILDER_SETTINGS),
    "builder_fallback": _choice("builder_fallback", FALLBACK_SETTINGS),
    "configs": _folder("configs"),
    "exclude": _exclude,
    "framework": _choice("framework", RELEASES),
    "model_folders": _model_folders,
    "snapshots": _folder("snapshots"),
    "world_size": _world_size,
}
"""Setting name -> its parser, which returns the typed value or raises :class:`SettingsError`."""
