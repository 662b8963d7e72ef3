"""The pure-data shape of a built model: what every later step needs, without torch.

A :class:`ModelStructure` is taken once from a live ``nn.Module`` (:func:`structure_of`) and can be
stored as JSON, so freezing plans, snapshots and reports run on names and sets alone. The module
and parameter names are the model's own, unchanged: canonicalising wrapper names is the resolver's
job.

Tied weights: one parameter object can be reachable under several names (``lm_head.weight`` and
``model.embed_tokens.weight``). It appears once, under the name ``named_parameters()`` gives first,
with the other names in ``aliases``. A module contains a parameter when any of its names lies under
the module's path, which is exactly what ``module.parameters()`` yields by identity.

Two facts beyond names are kept because the training framework's rules read them: which modules
are ``nn.Linear`` instances (LoRA patches those, subclasses included) and the few config values its
invariant freezes read (:class:`ConfigFacts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from math import prod
from typing import TYPE_CHECKING, Any

from mmfreeze.models.renames import Renames

if TYPE_CHECKING:
    from torch import nn

STRUCTURE_FORMAT_VERSION = 9
"""7 added ``probes``; 8 probes only the mixes asked for, and ``mixes`` says which the forward takes;
9 records ``containers`` by ``isinstance`` and the model's ``_keep_in_fp32_modules`` patterns."""

# Attributes the legacy freezing engine reads from the root object (mmfreeze.freeze.legacy).
LEGACY_ROOT_ATTRIBUTES = ("vision_tower", "audio_tower", "language_model")


@dataclass(frozen=True)
class ParameterInfo:
    """One parameter tensor of a model, under its canonical name and every alias."""

    name: str
    shape: tuple[int, ...]
    requires_grad: bool
    aliases: tuple[str, ...] = ()

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, kw_only=True)
class ConfigFacts:
    """The model config values nemo-automodel's invariant freezes read (``model_utils.py``)."""

    model_type: str = ""
    """``model.config.model_type`` (the root config's)."""
    num_hidden_layers: int = 0
    """From ``config.text_config`` when the config has one, else from ``config``."""
    num_kv_shared_layers: int = 0
    """Same lookup; Gemma4 E2B/E4B layers that reuse another layer's keys and values."""


@dataclass(frozen=True, kw_only=True)
class Probe:
    """What the loss of one synthetic batch (a data mix) leaves unreached, every parameter
    trainable, and how that was found (:mod:`mmfreeze.models.probe`)."""

    mix: str
    """``text``, or ``text+`` the inputs the batch carried (``text+image``)."""
    method: str
    """How the graph was read (a forward on meta, with fake tensors, or on a shrunken config);
    ``""`` when no method could run, and ``error`` says why."""
    unreached: tuple[str, ...] = ()
    """Canonical parameter names no path from the loss reaches, sorted."""
    error: str = ""


@dataclass(frozen=True)
class MixesToProbe:
    """Which data mixes a probed build takes a probe of: those ``named``, or (``every``) each one
    the model's training forward takes, for a recipe whose mix is unknown. A forward is most of a
    cold check's cost, so mixes no recipe asks for are not probed."""

    named: frozenset[str] = frozenset()
    every: bool = False

    def among(self, mixes: Iterable[str]) -> tuple[str, ...]:
        """Those of ``mixes`` (the forward's, in order) to probe."""
        return tuple(mix for mix in mixes if self.every or mix in self.named)

    def __or__(self, other: MixesToProbe) -> MixesToProbe:
        return MixesToProbe(named=self.named | other.named, every=self.every or other.every)


@dataclass(frozen=True, kw_only=True)
class StructurePart:
    """One model of a composite (``Gemma4WithDrafter``'s ``base`` and ``drafter``), as built alone."""

    prefix: str
    """The attribute the composite holds it under; its names are ``<prefix>.<own name>``."""
    class_name: str
    config_facts: ConfigFacts
    freeze_config: bool
    """Whether the recipe's `freeze_config` reaches it (the composite forwards it to the base only)."""
    root_attributes: Mapping[str, str] = field(default_factory=dict)
    """The part's own legacy root attributes (:attr:`ModelStructure.root_attributes`), in its own names."""


@dataclass(frozen=True)
class ModelStructure:
    """Module tree, parameters and legacy root attributes of one built model."""

    class_name: str
    modules: Mapping[str, str]
    """Module path -> class name, for every path ``named_modules(remove_duplicate=False)`` yields
    (``""`` is the root)."""
    module_aliases: Mapping[str, str]
    """Path -> first path of the same module object, for paths that reach an already seen module."""
    parameters: tuple[ParameterInfo, ...]
    root_attributes: Mapping[str, str] = field(default_factory=dict)
    """Legacy root attribute name -> the module path it returns (only when it is a module)."""
    linear_modules: frozenset[str] = frozenset()
    """Paths (every path, aliases included) of modules that are ``nn.Linear`` instances."""
    containers: Mapping[str, str] = field(default_factory=dict)
    """Path -> ``ModuleList`` or ``ModuleDict``, for every module that is an instance of one: a
    subclass too, which :attr:`modules` names by its own class (the framework wraps by ``isinstance``)."""
    config_facts: ConfigFacts = ConfigFacts()
    class_module: str = ""
    """The module that defines the class (``transformers.models.qwen3_5.modeling_qwen3_5`` or the
    framework's own): two libraries may define a class of the same name."""
    build_note: str = ""
    """Why the transformers class stands in for the framework's own (``builder_fallback =
    "transformers"``, the framework's class could not be built on meta); ``""`` otherwise."""
    built_by: str = ""
    """``nemo-automodel <release>`` when a transformers build stood the framework's own class in
    for a checkpoint transformers has no class for (``BuildSpec.stand_in``); ``""`` otherwise."""
    parts: tuple[StructurePart, ...] = ()
    """A composite's models, each trained as the framework trains it alone; ``()`` otherwise.
    ``requires_grad`` is then each part's as built, before the composite's constructor ran."""
    composite_frozen: frozenset[str] = frozenset()
    """The parameters the composite's constructor froze (on top of its parts' own rules)."""
    checkpoint_renames: Renames = Renames()
    """How the checkpoint's names become this model's under the transformers release that built it
    (:mod:`mmfreeze.models.conversion`); none for the framework's classes and composites."""
    mixes: tuple[str, ...] = ()
    """The data mixes the training forward takes, text first, when the build probed; ``()`` otherwise."""
    probes: tuple[Probe, ...] = ()
    """What the loss reaches for each mix of :attr:`mixes` some request asked for (a build worker
    probes the model it built; a composite, its whole forward); none when the build did not probe."""
    keep_in_fp32: tuple[str, ...] = ()
    """The built model's ``_keep_in_fp32_modules``: name patterns transformers loads in fp32 when
    the model is loaded in float16 (``PreTrainedModel._get_dtype_plan``)."""
    keep_in_fp32_strict: tuple[str, ...] = ()
    """Its ``_keep_in_fp32_modules_strict``: the same, in bfloat16 too. The instance gathers both from
    every sub-model (``post_init``), and the framework reads both from it."""

    def unprobed(self, wanted: MixesToProbe) -> MixesToProbe:
        """The mixes of :attr:`mixes` that ``wanted`` asks for and this structure holds no probe of."""
        taken = {probe.mix for probe in self.probes}
        return MixesToProbe(named=frozenset(mix for mix in wanted.among(self.mixes) if mix not in taken))

    def with_probes_of(self, earlier: ModelStructure) -> ModelStructure:
        """This structure (built for mixes ``earlier`` had no probe of) with ``earlier``'s probes too:
        ``earlier`` is the cached entry of the same key, and a probe depends on the key and its mix alone."""
        probes = {probe.mix: probe for probe in (*earlier.probes, *self.probes)}
        return replace(self, probes=tuple(probes[mix] for mix in self.mixes if mix in probes))

    def part(self, part: StructurePart) -> ModelStructure:
        """``part`` as a model of its own: its names without the prefix, its own config facts."""
        head = part.prefix + "."

        def own(path: str) -> str | None:
            if path == part.prefix:
                return ""
            return path[len(head):] if path.startswith(head) else None

        return ModelStructure(
            class_name=part.class_name,
            modules={own(p): c for p, c in self.modules.items() if own(p) is not None},
            module_aliases={own(p): own(t) for p, t in self.module_aliases.items()
                            if own(p) is not None and own(t) is not None},
            parameters=tuple(
                replace(info, name=own(info.name), aliases=tuple(own(a) for a in info.aliases if own(a) is not None))
                for info in self.parameters if own(info.name) is not None
            ),
            linear_modules=frozenset(own(p) for p in self.linear_modules if own(p) is not None),
            containers={own(p): kind for p, kind in self.containers.items() if own(p) is not None},
            config_facts=part.config_facts,
            root_attributes=dict(part.root_attributes),
        )

    def with_checkpoint_names(self) -> ModelStructure:
        """This model with every module and parameter under its checkpoint name
        (:attr:`checkpoint_renames` reversed): the module tree another release builds where it
        does not rename, on which a selector written for that release means what it meant."""
        return self.renamed(self.checkpoint_renames.to_checkpoint)

    def in_names_of(self, builder: Renames) -> ModelStructure:
        """This model's parameters as another builder names them: checkpoint names, then
        ``builder``'s renames (that builder's checkpoint -> its own names, as its snapshot recorded
        them). Every parent of a renamed parameter is a module, so a path selector written on that
        builder's tree selects what it selected there (a parent the renamed modules lack is added
        with no class name, ``""``)."""
        renamed = self.renamed(lambda name: builder.to_model(self.checkpoint_renames.to_checkpoint(name)))
        parents = {".".join(parts[:end]) for info in renamed.parameters for name in info.names
                   if (parts := name.split(".")) for end in range(len(parts))}
        return replace(renamed, modules={**dict.fromkeys(sorted(parents), ""), **renamed.modules})

    def renamed(self, name: Callable[[str], str]) -> ModelStructure:
        """This model with ``name`` applied to every module path and parameter name (no renames left)."""
        return replace(
            self,
            modules={name(path): kind for path, kind in self.modules.items()},
            module_aliases={name(path): name(target) for path, target in self.module_aliases.items()},
            parameters=tuple(replace(info, name=name(info.name), aliases=tuple(map(name, info.aliases)))
                             for info in self.parameters),
            root_attributes={attribute: name(path) for attribute, path in self.root_attributes.items()},
            linear_modules=frozenset(map(name, self.linear_modules)),
            containers={name(path): kind for path, kind in self.containers.items()},
            composite_frozen=frozenset(map(name, self.composite_frozen)),
            checkpoint_renames=Renames(),
            probes=tuple(replace(probe, unreached=tuple(sorted(map(name, probe.unreached)))) for probe in self.probes),
        )

    @cached_property
    def parameters_by_name(self) -> Mapping[str, ParameterInfo]:
        """Every name (canonical or alias) -> its parameter."""
        return {name: info for info in self.parameters for name in info.names}

    @property
    def total_numel(self) -> int:
        return sum(info.numel for info in self.parameters)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STRUCTURE_FORMAT_VERSION,
            "class_name": self.class_name,
            "class_module": self.class_module,
            "modules": dict(self.modules),
            "module_aliases": dict(self.module_aliases),
            "root_attributes": dict(self.root_attributes),
            "linear_modules": sorted(self.linear_modules),
            "containers": dict(self.containers),
            "config_facts": asdict(self.config_facts),
            "build_note": self.build_note,
            "built_by": self.built_by,
            "parts": [asdict(part) for part in self.parts],
            "composite_frozen": sorted(self.composite_frozen),
            "checkpoint_renames": self.checkpoint_renames.to_json(),
            "mixes": list(self.mixes),
            "probes": [asdict(probe) for probe in self.probes],
            "keep_in_fp32": list(self.keep_in_fp32),
            "keep_in_fp32_strict": list(self.keep_in_fp32_strict),
            "parameters": [
                [info.name, list(info.shape), info.requires_grad, list(info.aliases)]
                for info in self.parameters
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelStructure:
        if data.get("format") != STRUCTURE_FORMAT_VERSION:
            raise ValueError(f"structure format {data.get('format')!r} is not {STRUCTURE_FORMAT_VERSION}")
        return cls(
            class_name=data["class_name"],
            class_module=data["class_module"],
            modules=dict(data["modules"]),
            module_aliases=dict(data["module_aliases"]),
            root_attributes=dict(data["root_attributes"]),
            linear_modules=frozenset(data["linear_modules"]),
            containers=dict(data["containers"]),
            config_facts=ConfigFacts(**data["config_facts"]),
            build_note=data["build_note"],
            built_by=data["built_by"],
            parts=tuple(StructurePart(**{**part, "config_facts": ConfigFacts(**part["config_facts"])})
                        for part in data["parts"]),
            composite_frozen=frozenset(data["composite_frozen"]),
            checkpoint_renames=Renames.from_json(data["checkpoint_renames"]),
            mixes=tuple(data["mixes"]),
            probes=tuple(Probe(**{**probe, "unreached": tuple(probe["unreached"])}) for probe in data["probes"]),
            keep_in_fp32=tuple(data["keep_in_fp32"]),
            keep_in_fp32_strict=tuple(data["keep_in_fp32_strict"]),
            parameters=tuple(
                ParameterInfo(name=name, shape=tuple(shape), requires_grad=grad, aliases=tuple(aliases))
                for name, shape, grad, aliases in data["parameters"]
            ),
        )


def structure_of(model: nn.Module) -> ModelStructure:
    """Read the structure of a live model (any device); ``requires_grad`` as it is right now."""
    from torch import nn

    first_path: dict[int, str] = {}
    modules: dict[str, str] = {}
    module_aliases: dict[str, str] = {}
    linear: set[str] = set()
    containers: dict[str, str] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        modules[path] = type(module).__name__
        if isinstance(module, nn.Linear):
            linear.add(path)
        for container in (nn.ModuleList, nn.ModuleDict):
            if isinstance(module, container):
                containers[path] = container.__name__
        seen = first_path.setdefault(id(module), path)
        if seen != path:
            module_aliases[path] = seen
    return ModelStructure(
        class_name=type(model).__name__,
        class_module=type(model).__module__,
        modules=modules,
        module_aliases=module_aliases,
        parameters=tuple(_parameter_infos(model.named_parameters(remove_duplicate=False))),
        root_attributes=_root_attributes(model, first_path),
        linear_modules=frozenset(linear),
        containers=containers,
        config_facts=config_facts_of(model),
        keep_in_fp32=tuple(sorted(getattr(model, "_keep_in_fp32_modules", None) or ())),
        keep_in_fp32_strict=tuple(sorted(getattr(model, "_keep_in_fp32_modules_strict", None) or ())),
    )


def config_facts_of(model: nn.Module) -> ConfigFacts:
    """The config values the framework's invariants read, looked up the way it looks them up."""
    config = getattr(model, "config", None)
    text_config = getattr(config, "text_config", None)
    if text_config is None:
        text_config = config
    return ConfigFacts(
        model_type=str(getattr(config, "model_type", "") or ""),
        num_hidden_layers=int(getattr(text_config, "num_hidden_layers", 0) or 0),
        num_kv_shared_layers=int(getattr(text_config, "num_kv_shared_layers", 0) or 0),
    )


def _parameter_infos(named: Iterable[tuple[str, Any]]) -> Iterator[ParameterInfo]:
    names_by_id: dict[int, tuple[Any, list[str]]] = {}  # each tensor object, with every name it has
    for name, param in named:
        names_by_id.setdefault(id(param), (param, []))[1].append(name)
    for param, names in names_by_id.values():
        yield ParameterInfo(
            name=names[0],
            shape=tuple(param.shape),
            requires_grad=bool(param.requires_grad),
            aliases=tuple(names[1:]),
        )


def _root_attributes(model: nn.Module, first_path: Mapping[int, str]) -> dict[str, str]:
    from torch import nn

    found: dict[str, str] = {}
    for attribute in LEGACY_ROOT_ATTRIBUTES:
        value = getattr(model, attribute, None)
        if isinstance(value, nn.Module) and id(value) in first_path:
            found[attribute] = first_path[id(value)]
    return found
