"""Which mixes of modalities a recipe's batches carry: declared, implied by its dataset builder, or unknown.

What a loss reaches depends on the batch: a text-only batch runs no tower. So reachability is
asked per mix (``text``, ``text+image``, ``text+video``, ``text+audio``, or several at once), and
the mixes come from, in this order:

1. the recipe's declaration, beside the data side's other statement in the batch contract::

       distributed:
         multimodal:
           batch_contract:
             mixes: [text, text+image]      # some batches text only, some with an image

2. the framework's dataset builder the recipe names (:data:`BUILDER_MIXES`, nemo-automodel
   0.7.0's builders, each read in its source);
3. otherwise every plausible mix, said to be unknown: text, and each input the model's training
   forward takes (``make_meta_dataset`` reads whatever its meta file lists: images, videos or neither).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mmfreeze.boundary.names import DATASETS
from mmfreeze.exceptions import DistributedConfigError
from mmfreeze.models.structure import MixesToProbe
from mmfreeze.suggest import did_you_mean

MIXES_KEY = "mixes"
WHERE = f"distributed.multimodal.batch_contract.{MIXES_KEY}"
TEXT = "text"
INPUTS = ("image", "video", "audio")
"""What a batch may carry beside text."""

_DATASETS = DATASETS + "."
_IMAGE, _AUDIO, _TEXT = ("text+image",), ("text+audio",), (TEXT,)
BUILDER_MIXES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    **{f"{_DATASETS}vlm.datasets.{name}": _IMAGE for name in (
        "make_cord_v2_dataset", "make_medpix_dataset", "make_rdr_dataset", "make_llava_onevision_dataset",
        "make_unimm_chat_dataset", "make_shopify_product_catalogue_dataset")},
    f"{_DATASETS}vlm.mock.build_mock_vlm_dataset": _IMAGE,
    **{f"{_DATASETS}vlm.datasets.{name}": _TEXT for name in (
        "make_tulu3_dataset", "make_tulu3_magicoder_text_mix_dataset", "make_spider_dataset")},
    f"{_DATASETS}llm.chat_dataset.ChatDataset": _TEXT,
    **{f"{_DATASETS}audio.datasets.{name}": _AUDIO for name in ("make_hf_audio_asr_dataset", "make_cv17_dataset")},
})
"""nemo-automodel 0.7.0's dataset builders whose batches always carry the same inputs. Builders
whose inputs depend on their data files (``make_meta_dataset``) are not here: their mix is unknown."""


@dataclass(frozen=True)
class Mixes:
    """The mixes to ask reachability for, and where they come from (for `explain`)."""

    mixes: tuple[str, ...]
    source: str
    known: bool = True

    def describe(self) -> str:
        """``text+image (dataset builder make_cord_v2_dataset)``: the snapshot header's ``mixes``."""
        return f"{', '.join(self.mixes)} ({self.source})"


def parse_mixes(value: Any, *, source: str | None = None) -> tuple[str, ...]:
    """A declared ``mixes`` list, each ``text`` plus ``+``-joined inputs (``text+image+audio``)."""
    if not isinstance(value, list) or not value:
        raise DistributedConfigError(f"must be a list of mixes such as [text, text+image], got {value!r}",
                                     source=source, key=WHERE)
    mixes = []
    for index, mix in enumerate(value):
        parts = mix.split("+") if isinstance(mix, str) else []
        unknown = [part for part in parts[1:] if part not in INPUTS]
        if not parts or parts[0] != TEXT or unknown or len(set(parts)) != len(parts):
            hint = "".join(did_you_mean(part, INPUTS) for part in unknown)
            raise DistributedConfigError(
                f"a mix is `text` or `text+` one or more of {', '.join(INPUTS)} joined by `+`, got {mix!r}{hint}",
                source=source, key=f"{WHERE}[{index}]")
        mixes.append("+".join([TEXT, *sorted(parts[1:], key=INPUTS.index)]))
    return tuple(dict.fromkeys(mixes))


def recipe_mixes(document: Mapping[str, Any], plausible: Iterable[str], *, source: str | None = None) -> Mixes:
    """The recipe's mixes: declared, else its dataset builder's, else every ``plausible`` one (the
    mixes the model's forward takes, text first)."""
    declared = _declared(document)
    if declared is not None:
        return Mixes(parse_mixes(declared, source=source), f"declared: {WHERE}")
    dataset = document.get("dataset")
    target = dataset.get("_target_") if isinstance(dataset, Mapping) else None
    if isinstance(target, str) and target in BUILDER_MIXES:
        return Mixes(BUILDER_MIXES[target], f"dataset builder {target.rpartition('.')[2]}")
    why = f"dataset builder {target.rpartition('.')[2]}" if isinstance(target, str) else "no dataset section"
    return Mixes(tuple(plausible),
                 f"unknown, so every plausible one: {why}; declare {WHERE}", known=False)


def mixes_to_probe(document: Mapping[str, Any]) -> MixesToProbe:
    """What a recipe's reachability needs probed: its known mixes, or every one its model's forward
    takes. A declaration that does not parse asks for every one: the reachability step
    (:func:`~mmfreeze.reachability.recipe.recipe_reach`) reports its error, naming the file and key."""
    try:
        mixes = recipe_mixes(document, ())
    except DistributedConfigError:
        return MixesToProbe(every=True)
    return MixesToProbe(named=frozenset(mixes.mixes)) if mixes.known else MixesToProbe(every=True)


def mix_material(document: Mapping[str, Any]) -> list[Any]:
    """What :func:`recipe_mixes` reads of a recipe (its declaration, its dataset builder), for cache keys."""
    dataset = document.get("dataset")
    return [_declared(document), dataset.get("_target_") if isinstance(dataset, Mapping) else None]


def _declared(document: Mapping[str, Any]) -> Any:
    node: Any = document
    for key in ("distributed", "multimodal", "batch_contract"):
        node = node.get(key) if isinstance(node, Mapping) else None
    return node.get(MIXES_KEY) if isinstance(node, Mapping) else None
