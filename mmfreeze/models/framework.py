"""Which builder makes a recipe's model, and what the framework builds for an architecture.

NeMo AutoModel's ``NeMoAutoModelFor*`` builds its own implementation for about 71 architectures
(``MODEL_ARCH_MAPPING``) and the transformers class for the rest. mmfreeze builds one or the
other, by an explicit, recorded choice (:class:`BuilderChoice`):

- ``transformers``: the transformers class the recipe's Auto class picks;
- ``framework``: what the installed nemo-automodel builds (:mod:`mmfreeze.models.framework_build`);
- ``auto`` (default): ``framework`` when nemo-automodel is installed and the installed transformers
  satisfies its declared requirement, else ``transformers``. Both are read from package metadata:
  nothing is imported, so a warm check stays fast.

When the transformers class is built for an architecture the framework builds itself, the
snapshot says so (:func:`divergence_statement`), from ``framework_classes.json`` (package data
written by ``scripts/framework_classes.py`` from the framework's own registry), so the statement
is the same on a machine without the framework. How those classes name the checkpoint's tensors
is recorded beside it (``framework_renames.json``, :func:`framework_renames`), so a section compiled
on them is compared where they are not built. Nothing here imports torch, transformers or nemo.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from mmfreeze.boundary.names import DISTRIBUTION, PACKAGE_PREFIX, transformers_pin
from mmfreeze.exceptions import SettingsError
from mmfreeze.models.renames import Renames
from mmfreeze.recipes.composite import COMPOSITE_TARGETS
from mmfreeze.settings import BUILDER_SETTINGS, BuilderSetting, FallbackSetting
from mmfreeze.versions import installed_version

if TYPE_CHECKING:
    from mmfreeze.models.loader import ModelRequest
    from mmfreeze.models.structure import ModelStructure

DATA_FILE = "framework_classes.json"
RENAMES_FILE = "framework_renames.json"


@dataclass(frozen=True, kw_only=True)
class BuilderChoice:
    """The builder of one run, and why it was chosen (shown by ``explain`` and ``snapshot``,
    never stored in a snapshot)."""

    kind: Literal["framework", "transformers"]
    framework_version: str = ""
    """The installed nemo-automodel release, when ``kind`` is ``framework``."""
    fallback: FallbackSetting = "none"
    """``transformers``: build the transformers class when the framework's cannot be built on meta."""
    reason: str = ""
    stand_in: str = ""
    """``transformers`` beside an installed framework: its release, whose own class is built for a
    checkpoint transformers has no class for (:class:`BuildSpec`); ``""`` without the framework."""

    @property
    def label(self) -> str:
        """The snapshot header's ``builder:`` value: ``transformers`` / ``nemo-automodel 0.7.0``."""
        return f"nemo-automodel {self.framework_version}" if self.kind == "framework" else "transformers"

    def note(self) -> str:
        """One line for a run's output: which builder, and why."""
        fallback = "; falls back to transformers where a framework class cannot be built" if self.fallback == "transformers" else ""
        return f"builder: {self.label} ({self.reason}){fallback}"


TRANSFORMERS_BUILDER = BuilderChoice(kind="transformers", reason="default")


@dataclass(frozen=True, kw_only=True)
class BuildSpec:
    """How one recipe's model is built: part of its structure cache key (pure data, picklable)."""

    kind: Literal["framework", "transformers"]
    framework_version: str = ""
    fallback: FallbackSetting = "none"
    force_hf: bool = False
    """The recipe's ``model.force_hf``: the framework then builds the transformers class."""
    stand_in: str = ""
    """A transformers build of a framework target: the installed nemo-automodel release whose own
    class is built instead where transformers has no class for the checkpoint (MuseGlimmer behind
    ``NeMoAutoModelForCausalLM``), as the framework picks it, by ``architectures``; ``""``: none."""

    def identity(self) -> dict[str, Any]:
        if self.kind == "transformers":
            return {"builder": "transformers", **({"stand_in": self.stand_in} if self.stand_in else {})}
        return {"builder": "framework", "nemo_automodel": self.framework_version, "fallback": self.fallback,
                "force_hf": self.force_hf}


TRANSFORMERS_SPEC = BuildSpec(kind="transformers")


def choose_builder(setting: BuilderSetting = "auto", fallback: FallbackSetting = "none") -> BuilderChoice:
    """The run's builder: ``setting`` applied to what is installed (package metadata only)."""
    framework = installed_version(DISTRIBUTION)
    stand_in = "" if framework == "missing" else framework
    if setting == "transformers":
        return BuilderChoice(kind="transformers", stand_in=stand_in, reason="builder = transformers was asked for")
    if setting == "framework":
        if framework == "missing":
            raise SettingsError(
                f"builder = framework needs {DISTRIBUTION} installed; it is not (valid builders: "
                f"{', '.join(BUILDER_SETTINGS)})", key="builder",
            )
        compatible, requirement = transformers_satisfies_framework()
        mismatch = "" if compatible else (
            f"; transformers {installed_version('transformers')} does not satisfy its {requirement}, so some of its "
            "classes may not import, and the framework then builds the transformers class")
        return BuilderChoice(kind="framework", framework_version=framework, fallback=fallback,
                             reason=f"builder = framework was asked for{mismatch}")
    if framework == "missing":
        return BuilderChoice(kind="transformers", reason=f"auto: {DISTRIBUTION} is not installed")
    compatible, requirement = transformers_satisfies_framework()
    transformers = installed_version("transformers")
    if not compatible:
        return BuilderChoice(kind="transformers", stand_in=stand_in, reason=(
            f"auto: {DISTRIBUTION} {framework} requires {requirement}, "
            f"but transformers {transformers} is installed"))
    return BuilderChoice(kind="framework", framework_version=framework, fallback=fallback, reason=(
        f"auto: {DISTRIBUTION} {framework} is installed and transformers {transformers} satisfies its {requirement}"))


def transformers_satisfies_framework() -> tuple[bool, str]:
    """Whether the installed transformers satisfies the framework's declared requirement, and that
    requirement as text (``transformers==5.18.0``), from package metadata."""
    from packaging.requirements import Requirement  # a transformers dependency: always installed beside it

    installed = installed_version("transformers")
    pin = transformers_pin()
    if pin is None:
        return installed != "missing", "transformers (any version)"
    return installed != "missing" and Requirement(pin).specifier.contains(installed, prereleases=True), pin


def spec_for_recipe(choice: BuilderChoice, target: str, model_section: Mapping[str, Any] | None) -> BuildSpec:
    """The recipe's build: the framework's only for its own ``NeMoAutoModel*`` targets."""
    if not target.startswith(PACKAGE_PREFIX):
        return TRANSFORMERS_SPEC
    force_hf = isinstance(model_section, Mapping) and bool(model_section.get("force_hf", False))
    if choice.kind != "framework":
        # force_hf is kept (not part of a transformers build's identity) so the header states no
        # divergence: with it, the framework builds the transformers class too.
        return BuildSpec(kind="transformers", stand_in="" if force_hf else choice.stand_in, force_hf=force_hf)
    return BuildSpec(kind="framework", framework_version=choice.framework_version, fallback=choice.fallback,
                     force_hf=force_hf)


def builder_label(spec: BuildSpec) -> str:
    return f"nemo-automodel {spec.framework_version}" if spec.kind == "framework" else "transformers"


# -- what the framework builds, as data ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FrameworkClass:
    """The framework's own class(es) for one architecture name (``config.architectures[0]``)."""

    architecture: str
    classes: tuple[tuple[str, str], ...]
    """(module, class) pairs, in the order the framework tries them."""
    config_dependent: bool
    """The framework may build the transformers class instead, depending on the config."""

    def describe(self) -> str:
        return " or ".join(f"{name} ({module})" for module, name in self.classes)


@cache
def framework_data() -> Mapping[str, Any]:
    """``framework_classes.json`` (package data)."""
    text = resources.files("mmfreeze.models").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def framework_class_for(config: Mapping[str, Any]) -> FrameworkClass | None:
    """What the framework builds for this config.json content instead of the transformers class,
    keyed like the framework by ``architectures[0]``; ``None`` when it builds transformers'."""
    architectures = config.get("architectures") or ()
    if not architectures:
        return None
    entry = framework_data()["architectures"].get(architectures[0])
    if entry is None:
        return None
    classes = [(alt["module"], alt["class"]) for alt in entry.get("alternatives", ())]
    if entry.get("module"):
        classes.append((entry["module"], entry["class"]))
    return FrameworkClass(architecture=architectures[0], classes=tuple(dict.fromkeys(classes)),
                          config_dependent=bool(entry.get("config_dependent")))


@cache
def _renames_data() -> Mapping[str, Any]:
    """``framework_renames.json`` (package data)."""
    return json.loads(resources.files("mmfreeze.models").joinpath(RENAMES_FILE).read_text(encoding="utf-8"))


def framework_renames(made_for: str, config: Mapping[str, Any]) -> Renames | None:
    """How the class the framework builds for this config.json content names the checkpoint's
    tensors, where ``made_for`` (a ``compiled_for`` value) is the environment
    ``framework_renames.json`` was recorded in; ``None`` where it records none (another
    environment, transformers' class, a class whose state-dict adapter renames nothing or that no
    bundled recipe builds, or two candidate classes that rename differently)."""
    data, framework_class = _renames_data(), framework_class_for(config)
    if framework_class is None or data["made_for"] != made_for:
        return None
    entries = [data["classes"][name] for _, name in framework_class.classes if name in data["classes"]]
    return Renames.from_json(entries[0]) if len(entries) == 1 else None


def divergence_statement(
    config: Mapping[str, Any], built_class: str, *, target: str, spec: BuildSpec, fallback_reason: str = ""
) -> str:
    """The header line when the snapshot's model is the transformers class but the framework
    builds its own for this architecture; ``""`` when they agree."""
    # A composite's class is the framework's own; `explain` names the classes of its parts.
    if not target.startswith(PACKAGE_PREFIX) or spec.force_hf or target in COMPOSITE_TARGETS:
        return ""
    if spec.kind == "framework" and not fallback_reason:
        return ""
    framework = framework_class_for(config)
    if framework is None:
        return ""
    verb = "may build its own" if framework.config_dependent else "builds its own"
    tail = ", depending on the config" if framework.config_dependent else ""
    statement = f"built as transformers class {built_class}; the framework {verb} {framework.describe()} for this architecture{tail}"
    if fallback_reason:
        statement += f"; it could not be built on meta here ({fallback_reason})"
    return statement


def builder_fields(structure: ModelStructure, request: ModelRequest, config: Mapping[str, Any], *,
                   target: str) -> dict[str, str]:
    """The snapshot header's ``builder`` and ``divergence`` values for ``structure`` built for ``request``
    (also shown by ``explain``); no divergence where the framework's class stood in (``structure.built_by``)."""
    note, spec = structure.build_note, request.build
    divergence = "" if structure.built_by else divergence_statement(
        config, structure.class_name, target=target, spec=spec, fallback_reason=note)
    return {"builder": built_label(builder_label(spec), build_note=note, built_by=structure.built_by),
            "divergence": divergence}


def built_label(label: str, *, build_note: str = "", built_by: str = "") -> str:
    """What really built a model the builder ``label`` was asked for: the framework's label when its
    class stood in (``built_by``), the transformers class after a fallback (``build_note`` says why)."""
    if built_by:
        return built_by
    return f"{FALLBACK_PREFIX}{label})" if build_note else label


FALLBACK_PREFIX = "transformers (fallback from "
"""How a builder label starts when the transformers class stood in for the framework's (the
snapshot header's ``builder``, a compiled section's ``compiled_for``)."""
