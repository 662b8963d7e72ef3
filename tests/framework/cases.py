"""The section matrix of the differential tests, made concrete for one model's module tree.

Selector cases need paths that exist in the model, so they are chosen from its structure: the
first decoder layer (``...layers.0``) and the first Linear inside it. Every case is a pair of
recipe sections, `freeze_config` and `peft`, exactly as a recipe would write them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from mmfreeze.models.structure import ModelStructure

Kind = Literal["legacy", "selector", "lora", "rejection", "pre-0.7"]
PEFT_TARGET = "nemo_automodel.components._peft.lora.PeftConfig"


@dataclass(frozen=True, kw_only=True)
class Case:
    name: str
    kind: Kind
    freeze_config: Any = None
    peft: dict[str, Any] | None = None
    rejected_key: str = ""
    """For rejections: the recipe key mmfreeze's error (or its 0.6 reason) must name."""
    as_06_reads_it: Any = None
    """For pre-0.7 cases: the 0.7 section that means what 0.6 read (the framework runs that)."""

    @property
    def document(self) -> dict[str, Any]:
        sections = {"freeze_config": self.freeze_config, "peft": self.peft}
        return {key: value for key, value in sections.items() if value is not None}


def _peft(**fields: Any) -> dict[str, Any]:
    return {"_target_": PEFT_TARGET, "dim": 4, **fields}


def first_layer(structure: ModelStructure) -> tuple[str, str]:
    """The first ``layers.0`` module path and the first Linear below it."""
    layer = next(path for path in structure.modules if path.endswith("layers.0"))
    linear = next(path for path in structure.modules if path.startswith(layer + ".") and path in structure.linear_modules)
    return layer, linear


def cases_for(structure: ModelStructure) -> Iterator[Case]:
    layer, linear = first_layer(structure)
    leaf = linear.rsplit(".", 1)[-1]
    yield from _legacy()
    yield from _selectors(layer, linear, leaf)
    yield from _lora(layer, leaf)
    yield from _rejections(layer)


def _legacy() -> Iterator[Case]:
    yield Case(name="legacy: empty section (vision frozen by default)", kind="legacy", freeze_config={})
    yield Case(name="legacy: language model only", kind="legacy",
               freeze_config={"freeze_vision_tower": False, "freeze_language_model": True})
    yield Case(name="legacy: audio and video embedder", kind="legacy",
               freeze_config={"freeze_audio_tower": True, "freeze_video_embedder": True})


def _selectors(layer: str, linear: str, leaf: str) -> Iterator[Case]:
    yield Case(name="selector: path", kind="selector", freeze_config={"freeze_modules": [{"path": layer}]})
    yield Case(name="selector: glob over every layer's leaf", kind="selector",
               freeze_config={"freeze_modules": [{"glob": f"*.{leaf}"}]})
    yield Case(name="selector: overlap, unfreeze wins", kind="selector",
               freeze_config={"freeze_modules": [{"glob": "*layers.0*"}], "unfreeze_modules": [{"path": linear}]})
    yield Case(name="selector: with legacy flags", kind="selector",
               freeze_config={"freeze_language_model": True, "unfreeze_modules": [{"glob": f"{layer}*"}]})


def _lora(layer: str, leaf: str) -> Iterator[Case]:
    yield Case(name="lora: exclude-only", kind="lora", peft=_peft(exclude_modules=["*vision*", "*visual*", "*lm_head*"]))
    yield Case(name="lora: empty section (*_proj)", kind="lora", peft=_peft())
    yield Case(name="lora: match_all_linear (lm_head included)", kind="lora", peft=_peft(match_all_linear=True))
    yield Case(name="lora: wildcard targets", kind="lora", peft=_peft(target_modules=[f"*.{leaf}", "*.layers.1.*"]))
    yield Case(name="lora: bare leaf name (selects nothing nested)", kind="lora", peft=_peft(target_modules=[leaf]))
    yield Case(name="lora: with unfreeze of a base layer", kind="lora",
               peft=_peft(target_modules=["*_proj"]), freeze_config={"unfreeze_modules": [{"path": layer}]})


def _rejections(layer: str) -> Iterator[Case]:
    yield Case(name="reject: selector matching nothing", kind="rejection",
               freeze_config={"freeze_modules": [{"path": f"{layer}.no_such_module"}]},
               rejected_key="freeze_config.freeze_modules[0]")
    yield Case(name="reject: selector with path and glob", kind="rejection",
               freeze_config={"freeze_modules": [{"path": layer, "glob": "*"}]},
               rejected_key="freeze_config.freeze_modules[0]")
    yield Case(name="reject: selectors are not a list", kind="rejection",
               freeze_config={"unfreeze_modules": {"path": layer}}, rejected_key="freeze_config.unfreeze_modules")
    yield Case(name="reject: unknown key beside selectors", kind="rejection",
               freeze_config={"freeze_modules": [{"path": layer}], "freeze_embeddings": True},
               rejected_key="freeze_config")
    yield Case(name="reject: non-boolean flag beside selectors", kind="rejection",
               freeze_config={"unfreeze_modules": [{"path": layer}], "freeze_audio_tower": "yes"},
               rejected_key="freeze_config")
    yield Case(name="reject: lora targets and excludes", kind="rejection",
               peft=_peft(target_modules=["*_proj"], exclude_modules=["*visual*"]), rejected_key="peft")
    yield Case(name="reject: lora match_all with excludes", kind="rejection",
               peft=_peft(match_all_linear=True, exclude_modules=["*visual*"]), rejected_key="peft.match_all_linear")
    yield Case(name="reject: unknown PeftConfig field", kind="rejection", peft=_peft(rank=4), rejected_key="peft")
    # 0.7 rejects these, 0.6 trained them: an input error in a 0.7 repository, 0.6's rules where 0.6 is declared.
    yield Case(name="pre-0.7: ignored freeze_embeddings", kind="pre-0.7",
               freeze_config={"freeze_embeddings": True}, rejected_key="freeze_config.freeze_embeddings",
               as_06_reads_it={})
    yield Case(name="pre-0.7: truthy string flag", kind="pre-0.7",
               freeze_config={"freeze_vision_tower": "false"}, rejected_key="freeze_config.freeze_vision_tower",
               as_06_reads_it={"freeze_vision_tower": True})
